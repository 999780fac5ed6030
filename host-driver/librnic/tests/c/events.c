/* Completion events through the verbs C API, compiled against rdma-core's <infiniband/verbs.h>
 * and linked with -libverbs, run on librnic with RNIC_DEVICE=sim (one NIC, port looped back):
 * ibv_create_comp_channel, ibv_create_cq with the channel and a cq_context, ibv_req_notify_cq
 * (inline, through ibv_context_ops), ibv_get_cq_event (blocking, and non-blocking once the
 * program sets O_NONBLOCK on channel->fd, as ibv_rc_pingpong's event loop may), poll(2) on
 * channel->fd, ibv_ack_cq_events, and the EBUSY rules of ibv_destroy_cq and
 * ibv_destroy_comp_channel. QP A sends into QP B; B's CQ has the channel. Prints "PASS" and
 * exits 0, or names the first failure and exits 1. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "common.h"

#define SIZE 4096

static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn, union ibv_gid *gid)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1 };
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "to INIT");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0, "to RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			    IBV_QP_MAX_QP_RD_ATOMIC) == 0, "to RTS");
}

/* One SEND of 64 bytes from A (flags) into a receive posted at B; waits for A's completion, so
 * B's receive completion (written before the ACK leaves) and its interrupt are done. */
static void send(struct ibv_qp *qa, struct ibv_qp *qb, struct ibv_cq *cqa, struct ibv_mr *ma, struct ibv_mr *mb,
		 uint64_t id, int flags)
{
	struct ibv_sge rs = { .addr = (uintptr_t)mb->addr, .length = SIZE, .lkey = mb->lkey };
	struct ibv_recv_wr rwr = { .wr_id = id, .sg_list = &rs, .num_sge = 1 }, *rbad;
	CHECK(ibv_post_recv(qb, &rwr, &rbad) == 0, "post_recv");
	struct ibv_sge ss = { .addr = (uintptr_t)ma->addr, .length = 64, .lkey = ma->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | flags }, *bad;
	CHECK(ibv_post_send(qa, &wr, &bad) == 0, "post_send");
	struct ibv_wc wc = poll_one(cqa);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == id, "send completion %s", ibv_wc_status_str(wc.status));
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

int main(void)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	CHECK(list && n >= 1, "device list");
	struct ibv_context *ctx = ibv_open_device(list[0]);
	CHECK(ctx, "open_device");
	ibv_free_device_list(list);
	union ibv_gid gid;
	CHECK(ibv_query_gid(ctx, 1, 1, &gid) == 0, "query_gid");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	char *a = aligned_alloc(4096, SIZE), *b = aligned_alloc(4096, SIZE);
	memset(a, 0x5a, SIZE);
	struct ibv_mr *ma = ibv_reg_mr(pd, a, SIZE, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mb = ibv_reg_mr(pd, b, SIZE, IBV_ACCESS_LOCAL_WRITE);
	CHECK(pd && ma && mb, "pd, mr");

	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	CHECK(ch && ch->fd >= 0 && ch->context == ctx, "create_comp_channel errno %d", errno);
	int tag;
	struct ibv_cq *cqa = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_cq *cqb = ibv_create_cq(ctx, 32, &tag, ch, 0);
	CHECK(cqa && cqb && cqb->channel == ch && cqb->cq_context == &tag, "create_cq errno %d", errno);
	CHECK(ibv_req_notify_cq(cqa, 0) == EINVAL, "arming a CQ without a channel is EINVAL");
	struct ibv_qp_init_attr ia = { .send_cq = cqa, .recv_cq = cqa, .cap = { .max_send_wr = 16, .max_recv_wr = 16,
		.max_send_sge = 1, .max_recv_sge = 1 }, .qp_type = IBV_QPT_RC };
	struct ibv_qp *qa = ibv_create_qp(pd, &ia);
	ia.send_cq = ia.recv_cq = cqb;
	struct ibv_qp *qb = ibv_create_qp(pd, &ia);
	CHECK(qa && qb, "create_qp");
	connect_qp(qa, qb->qp_num, &gid);
	connect_qp(qb, qa->qp_num, &gid);

	/* Armed: one event, for cqb with its cq_context; the completion is there. */
	CHECK(ibv_req_notify_cq(cqb, 0) == 0, "req_notify_cq");
	send(qa, qb, cqa, ma, mb, 1, 0);
	CHECK(readable(ch->fd), "channel fd readable after the interrupt");
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0, "get_cq_event errno %d", errno);
	CHECK(ev_cq == cqb && ev_ctx == &tag, "the event names cqb and its context");
	struct ibv_wc wc = poll_one(cqb);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id == 1, "receive completion");
	CHECK(ibv_destroy_comp_channel(ch) == EBUSY, "destroy_comp_channel with a CQ: EBUSY");

	/* Non-blocking fd: no event without an arm. */
	CHECK(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0, "O_NONBLOCK");
	send(qa, qb, cqa, ma, mb, 2, 0);
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN, "no arm, no event (errno %d)", errno);
	poll_one(cqb);

	/* Solicited only: a plain SEND does not fire, a solicited one does. */
	CHECK(ibv_req_notify_cq(cqb, 1) == 0, "req_notify_cq solicited");
	send(qa, qb, cqa, ma, mb, 3, 0);
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN, "unsolicited: no event");
	poll_one(cqb);
	send(qa, qb, cqa, ma, mb, 4, IBV_SEND_SOLICITED);
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cqb, "solicited: event (errno %d)", errno);
	wc = poll_one(cqb);
	CHECK(wc.wr_id == 4, "the solicited receive");

	/* Two events unacknowledged: destroy_cq is EBUSY until they are acknowledged. */
	CHECK(ibv_destroy_qp(qb) == 0 && ibv_destroy_qp(qa) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cqb) == EBUSY, "destroy_cq with unacknowledged events: EBUSY");
	ibv_ack_cq_events(cqb, 2);
	CHECK(cqb->comp_events_completed == 2, "comp_events_completed %u", cqb->comp_events_completed);
	CHECK(ibv_destroy_cq(cqb) == 0 && ibv_destroy_cq(cqa) == 0, "destroy_cq");
	CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy_comp_channel");
	CHECK(ibv_dereg_mr(ma) == 0 && ibv_dereg_mr(mb) == 0 && ibv_dealloc_pd(pd) == 0, "cleanup");
	CHECK(ibv_close_device(ctx) == 0, "close_device");
	printf("PASS\n");
	return 0;
}
