/* Prints every status, event, port-state and node-type string of libibverbs: run against
 * rdma-core's library and against librnic, the outputs must be equal. */
#include <stdio.h>
#include <infiniband/verbs.h>

int main(void)
{
	for (int i = -1; i < 32; i++)
		printf("wc %d %s\nev %d %s\nport %d %s\nnode %d %s\n", i,
		       ibv_wc_status_str((enum ibv_wc_status)i), i,
		       ibv_event_type_str((enum ibv_event_type)i), i,
		       ibv_port_state_str((enum ibv_port_state)i), i,
		       ibv_node_type_str((enum ibv_node_type)i));
	for (int r = 0; r < 24; r++)
		printf("rate %d mult %d mbps %d back %d %d\n", r, ibv_rate_to_mult((enum ibv_rate)r),
		       ibv_rate_to_mbps((enum ibv_rate)r), (int)mult_to_ibv_rate(ibv_rate_to_mult((enum ibv_rate)r)),
		       (int)mbps_to_ibv_rate(ibv_rate_to_mbps((enum ibv_rate)r)));
	return 0;
}
