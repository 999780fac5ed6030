/* rdma_event_str for every event and a few out of range, printed one per line: run on
 * rdma-core's librdmacm and on librnic, the outputs must be the same. */
#include <stdio.h>
#include <rdma/rdma_cma.h>

int main(void)
{
	for (int e = -1; e <= 17; e++)
		printf("%d %s\n", e, rdma_event_str((enum rdma_cm_event_type)e));
	return 0;
}
