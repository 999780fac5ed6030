/* An ordinary verbs program, compiled against rdma-core's <infiniband/verbs.h> and linked
 * with -libverbs, run on librnic: it lists and queries the device, connects two RC QPs -- of
 * the one device (no argument; RNIC_DEVICE=sim: the port is looped back) or of devices 0 and 1
 * ("two"; RNIC_DEVICE=sim:2: two NICs cabled back to back) --, moves data with RDMA WRITE,
 * RDMA READ and SEND through the inline ibv_post_send / ibv_post_recv / ibv_poll_cq, checks
 * every byte, and checks the error paths (bad_wr, EBUSY). Prints "PASS" and exits 0, or names
 * the first failure and exits 1. Side A owns buffers a and c, side B buffer b. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "common.h"

#define SIZE 8192

static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn, uint32_t my_psn, uint32_t dest_psn, union ibv_gid *gid, enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "to INIT");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = dest_psn;
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
	a.sq_psn = my_psn;
	a.max_rd_atomic = 1;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			    IBV_QP_MAX_QP_RD_ATOMIC) == 0, "to RTS");
	CHECK(qp->state == IBV_QPS_RTS, "qp->state %d", qp->state);
}

int main(int argc, char **argv)
{
	int n, two = argc > 1 && strcmp(argv[1], "two") == 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	CHECK(list && n >= 1 + two && list[n] == NULL, "device list (%d)", n);
	printf("device %s guid %016llx\n", ibv_get_device_name(list[0]), (unsigned long long)be64toh(ibv_get_device_guid(list[0])));
	struct ibv_context *ctx = ibv_open_device(list[0]);
	CHECK(ctx, "ibv_open_device errno %d", errno);
	struct ibv_context *ctxb = two ? ibv_open_device(list[1]) : ctx;
	CHECK(ctxb, "ibv_open_device 1 errno %d", errno);
	ibv_free_device_list(list);

	struct ibv_device_attr da;
	CHECK(ibv_query_device(ctx, &da) == 0, "query_device");
	CHECK(da.max_qp_wr == 32768 && da.max_sge == 15 && da.max_qp_rd_atom == 16 && da.atomic_cap == IBV_ATOMIC_HCA &&
	      da.max_srq_sge == 15 && da.phys_port_cnt == 1, "device attributes %d %d %d %d", da.max_qp_wr, da.max_sge,
	      da.max_qp_rd_atom, da.atomic_cap);
	struct ibv_port_attr pa;
	CHECK(ibv_query_port(ctx, 1, &pa) == 0, "query_port");
	CHECK(pa.state == IBV_PORT_ACTIVE && pa.link_layer == IBV_LINK_LAYER_ETHERNET && pa.active_mtu == IBV_MTU_4096 &&
	      pa.gid_tbl_len == 2, "port attributes");
	union ibv_gid gid0, gid1;
	CHECK(ibv_query_gid(ctx, 1, 0, &gid0) == 0 && ibv_query_gid(ctx, 1, 1, &gid1) == 0, "query_gid");
	char s[64];
	inet_ntop(AF_INET6, gid1.raw, s, sizeof s);
	printf("gid[1] %s\n", s);
	CHECK(gid0.raw[0] == 0xfe && gid0.raw[1] == 0x80, "GID 0 link-local");
	CHECK(gid1.raw[10] == 0xff && gid1.raw[11] == 0xff, "GID 1 IPv4-mapped");
	CHECK(ibv_query_gid(ctx, 1, 2, &gid0) != 0, "GID index 2 exists");
	union ibv_gid gidb;
	CHECK(ibv_query_gid(ctxb, 1, 1, &gidb) == 0, "query_gid of B");
	inet_ntop(AF_INET6, gidb.raw, s, sizeof s);
	printf("gid[1] of B %s\n", s);

	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_pd *pdb = two ? ibv_alloc_pd(ctxb) : pd;
	CHECK(pd && pdb, "alloc_pd");
	char *a = aligned_alloc(4096, SIZE), *b = aligned_alloc(4096, SIZE), *c = aligned_alloc(4096, SIZE);
	for (int i = 0; i < SIZE; i++) {
		a[i] = (char)(i * 7 + 3);
		b[i] = 0;
		c[i] = 0;
	}
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *ma = ibv_reg_mr(pd, a, SIZE, acc), *mb = ibv_reg_mr(pdb, b, SIZE, acc), *mc = ibv_reg_mr(pd, c, SIZE, acc);
	CHECK(ma && mb && mc, "reg_mr errno %d", errno);
	CHECK(ibv_dealloc_pd(pd) == EBUSY, "dealloc_pd with MRs must be EBUSY");

	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *cqb = two ? ibv_create_cq(ctxb, 64, NULL, NULL, 0) : cq;
	CHECK(cq && cqb && cq->cqe >= 64, "create_cq");
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .cap = { .max_send_wr = 16, .max_recv_wr = 16,
		.max_send_sge = 1, .max_recv_sge = 1 }, .qp_type = IBV_QPT_RC };
	struct ibv_qp *qa = ibv_create_qp(pd, &ia);
	ia.send_cq = ia.recv_cq = cqb;
	struct ibv_qp *qb = ibv_create_qp(pdb, &ia);
	ia.send_cq = ia.recv_cq = cq;
	CHECK(qa && qb && (two || qa->qp_num != qb->qp_num), "create_qp errno %d", errno);
	CHECK(ibv_destroy_cq(cq) == EBUSY, "destroy_cq with QPs must be EBUSY");
	struct ibv_qp_init_attr uc = ia;
	uc.qp_type = IBV_QPT_UC;
	CHECK(ibv_create_qp(pd, &uc) == NULL && errno == EOPNOTSUPP, "UC QP: EOPNOTSUPP (errno %d)", errno);
	connect_qp(qa, qb->qp_num, 0x1234, 0x777, &gidb, IBV_MTU_1024);
	connect_qp(qb, qa->qp_num, 0x777, 0x1234, &gid1, IBV_MTU_1024);
	struct ibv_qp_attr qattr;
	struct ibv_qp_init_attr qinit;
	CHECK(ibv_query_qp(qa, &qattr, IBV_QP_STATE, &qinit) == 0 && qattr.qp_state == IBV_QPS_RTS &&
	      qattr.dest_qp_num == qb->qp_num && qattr.path_mtu == IBV_MTU_1024 && qinit.cap.max_send_wr >= 16, "query_qp");

	/* RDMA WRITE a -> b */
	struct ibv_sge sge = { .addr = (uintptr_t)a, .length = SIZE, .lkey = ma->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED }, *bad = NULL;
	wr.wr.rdma.remote_addr = (uintptr_t)b;
	wr.wr.rdma.rkey = mb->rkey;
	CHECK(ibv_post_send(qa, &wr, &bad) == 0, "post WRITE");
	struct ibv_wc wc = poll_one(cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == 1 && wc.qp_num == qa->qp_num,
	      "WRITE completion: %s opcode %d", ibv_wc_status_str(wc.status), wc.opcode);
	CHECK(memcmp(a, b, SIZE) == 0, "WRITE data");

	/* RDMA READ b -> c */
	sge.addr = (uintptr_t)c;
	sge.lkey = mc->lkey;
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK(ibv_post_send(qa, &wr, &bad) == 0, "post READ");
	wc = poll_one(cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == SIZE, "READ completion: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(memcmp(a, c, SIZE) == 0, "READ data");

	/* Every completion polled and nothing outstanding: the CQ can move to a larger ring, and
	 * the next completions land in the new one (the NIC restarted its producer index). */
	CHECK(ibv_resize_cq(cq, 200) == 0 && cq->cqe >= 200, "resize_cq to 200: cqe %d", cq->cqe);

	/* SEND a[100..1100] -> b (receive posted on qb), with immediate data */
	memset(b, 0, SIZE);
	struct ibv_sge rsge = { .addr = (uintptr_t)b, .length = SIZE, .lkey = mb->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 77, .sg_list = &rsge, .num_sge = 1 }, *rbad = NULL;
	CHECK(ibv_post_recv(qb, &rwr, &rbad) == 0, "post_recv");
	CHECK(ibv_resize_cq(cqb, 300) == EBUSY, "resize_cq with a receive outstanding must be EBUSY");
	sge.addr = (uintptr_t)a + 100;
	sge.length = 1000;
	sge.lkey = ma->lkey;
	wr.wr_id = 3;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(0xabcd1234);
	CHECK(ibv_post_send(qa, &wr, &bad) == 0, "post SEND");
	int got_send = 0, got_recv = 0;
	for (int k = 0; k < 2; k++) {
		wc = two ? poll_one(k == 0 ? cq : cqb) : poll_one(cq);
		CHECK(wc.status == IBV_WC_SUCCESS, "SEND/RECV completion: %s", ibv_wc_status_str(wc.status));
		if (wc.opcode == IBV_WC_SEND && wc.wr_id == 3) {
			got_send = 1;
		} else if (wc.opcode == IBV_WC_RECV && wc.wr_id == 77) {
			got_recv = 1;
			CHECK(wc.byte_len == 1000 && wc.qp_num == qb->qp_num, "receive byte_len %u", wc.byte_len);
			CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xabcd1234, "immediate %x flags %x",
			      ntohl(wc.imm_data), wc.wc_flags);
		}
	}
	CHECK(got_send && got_recv, "send %d recv %d", got_send, got_recv);
	CHECK(memcmp(a + 100, b, 1000) == 0, "SEND data");

	/* A list whose second WR is bad: the first is posted, bad_wr names the second. */
	struct ibv_send_wr w2 = wr, w1 = wr;
	w1.wr_id = 4;
	w1.opcode = IBV_WR_RDMA_WRITE;
	w1.wr.rdma.remote_addr = (uintptr_t)b;
	w1.wr.rdma.rkey = mb->rkey;
	w1.next = &w2;
	w2.wr_id = 5;
	w2.opcode = 99;
	w2.next = NULL;
	bad = NULL;
	CHECK(ibv_post_send(qa, &w1, &bad) == EINVAL && bad == &w2, "bad_wr");
	wc = poll_one(cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 4, "the WR before bad_wr completed");

	/* SQD (IBTA Vol 1 10.3.1): RTS -> SQD with en_sqd_async_notify. Nothing is outstanding, so
	 * the SQ drains at once: IBV_EVENT_SQ_DRAINED on qa. A WRITE posted in SQD waits (no
	 * completion over 20000 polls) until SQD -> RTS, which resumes it without a new post. */
	struct ibv_qp_attr sqd = { .qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1 };
	CHECK(ibv_modify_qp(qa, &sqd, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY) == 0 && qa->state == IBV_QPS_SQD,
	      "to SQD");
	CHECK(ibv_query_qp(qa, &qattr, IBV_QP_STATE, &qinit) == 0 && qattr.qp_state == IBV_QPS_SQD, "query_qp in SQD");
	struct ibv_async_event sev;
	do {
		CHECK(ibv_get_async_event(ctx, &sev) == 0, "get_async_event errno %d", errno);
		ibv_ack_async_event(&sev);
	} while (sev.event_type == IBV_EVENT_COMM_EST);
	CHECK(sev.event_type == IBV_EVENT_SQ_DRAINED && sev.element.qp == qa, "async event %s on %p, expected %s on %p",
	      ibv_event_type_str(sev.event_type), (void *)sev.element.qp, ibv_event_type_str(IBV_EVENT_SQ_DRAINED),
	      (void *)qa);
	printf("async event: %s on QP %u\n", ibv_event_type_str(sev.event_type), sev.element.qp->qp_num);
	w1.next = NULL;
	w1.wr_id = 7;
	CHECK(ibv_post_send(qa, &w1, &bad) == 0, "post WRITE in SQD");
	for (int i = 0; i < 20000; i++)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "a WRITE completed in SQD (wr_id %llu)", (unsigned long long)wc.wr_id);
	sqd.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(qa, &sqd, IBV_QP_STATE) == 0 && qa->state == IBV_QPS_RTS, "SQD to RTS");
	wc = poll_one(cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 7, "the WRITE held in SQD: %s", ibv_wc_status_str(wc.status));

	/* rereg_mr: access in place, keys kept. */
	uint32_t lkey = mb->lkey;
	CHECK(ibv_rereg_mr(mb, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE) == 0 && mb->lkey == lkey,
	      "rereg_mr");
	/* Now b refuses remote writes: the WRITE completes with a remote access error. */
	w1.next = NULL;
	w1.wr_id = 6;
	CHECK(ibv_post_send(qa, &w1, &bad) == 0, "post WRITE to a read-only region");
	wc = poll_one(cq);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 6, "expected remote access error, got %s",
	      ibv_wc_status_str(wc.status));
	printf("status %d: %s\n", wc.status, ibv_wc_status_str(wc.status));
	/* The responder raised IBV_EVENT_QP_ACCESS_ERR on qb (IBTA Vol 1 9.9.3): ibv_get_async_event
	 * blocks until it is there and names the program's own ibv_qp. */
	struct ibv_async_event aev;
	do {
		CHECK(ibv_get_async_event(two ? ctxb : ctx, &aev) == 0, "get_async_event errno %d", errno);
		ibv_ack_async_event(&aev);
	} while (aev.event_type == IBV_EVENT_COMM_EST);
	CHECK(aev.event_type == IBV_EVENT_QP_ACCESS_ERR && aev.element.qp == qb, "async event %s on %p, expected %s on %p",
	      ibv_event_type_str(aev.event_type), (void *)aev.element.qp, ibv_event_type_str(IBV_EVENT_QP_ACCESS_ERR),
	      (void *)qb);
	printf("async event: %s on QP %u\n", ibv_event_type_str(aev.event_type), aev.element.qp->qp_num);

	/* A shared receive queue: created, queried, armed, posted to through the inline
	 * ibv_post_srq_recv, busy while a QP uses it. */
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 10, .max_sge = 2 } };
	struct ibv_srq *srq = ibv_create_srq(pdb, &sa);
	CHECK(srq && sa.attr.max_wr >= 10 && sa.attr.max_sge >= 2, "create_srq errno %d", errno);
	struct ibv_srq_attr sq = { .srq_limit = 3 };
	CHECK(ibv_modify_srq(srq, &sq, IBV_SRQ_LIMIT) == 0, "modify_srq limit");
	CHECK(ibv_query_srq(srq, &sq) == 0 && sq.srq_limit == 3 && sq.max_wr >= 10, "query_srq");
	rwr.next = NULL;
	CHECK(ibv_post_srq_recv(srq, &rwr, &rbad) == 0, "post_srq_recv");
	struct ibv_qp_init_attr si = ia;
	si.send_cq = si.recv_cq = cqb;
	si.srq = srq;
	si.cap.max_recv_wr = 0;
	struct ibv_qp *qs = ibv_create_qp(pdb, &si);
	CHECK(qs, "create_qp on an SRQ errno %d", errno);
	CHECK(ibv_destroy_srq(srq) == EBUSY, "destroy_srq with a QP on it must be EBUSY");
	CHECK(ibv_destroy_qp(qs) == 0 && ibv_destroy_srq(srq) == 0, "destroy the SRQ after its QP");

	/* A CQ overrun: a send CQ of cqe 1 that is never polled takes three signaled WRITEs (the
	 * posts are not refused); the NIC finds it full and raises IBV_EVENT_CQ_ERR naming the
	 * program's own ibv_cq. */
	struct ibv_cq *small = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	CHECK(small && small->cqe >= 1, "create_cq 1");
	struct ibv_qp_init_attr oa = ia;
	oa.send_cq = small;
	struct ibv_qp *qo = ibv_create_qp(pd, &oa);
	oa.send_cq = oa.recv_cq = cqb;
	struct ibv_qp *qq = ibv_create_qp(pdb, &oa);
	CHECK(qo && qq, "create_qp for the overrun errno %d", errno);
	connect_qp(qo, qq->qp_num, 0x4000, 0x5000, &gidb, IBV_MTU_1024);
	connect_qp(qq, qo->qp_num, 0x5000, 0x4000, &gid1, IBV_MTU_1024);
	struct ibv_mr *md = ibv_reg_mr(pdb, c, 64, acc);
	CHECK(md, "reg_mr for the overrun errno %d", errno);
	struct ibv_sge osge = { .addr = (uintptr_t)a, .length = 8, .lkey = ma->lkey };
	struct ibv_send_wr owr = { .sg_list = &osge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED };
	owr.wr.rdma.remote_addr = (uintptr_t)c;
	owr.wr.rdma.rkey = md->rkey;
	int writes = 2 * small->cqe + 1;
	for (int k = 0; k < writes; k++) {
		owr.wr_id = 100 + k;
		CHECK(ibv_post_send(qo, &owr, &bad) == 0, "post WRITE %d on a CQ of cqe %d", k, small->cqe);
	}
	int seen = 0;
	do {
		CHECK(ibv_get_async_event(ctx, &aev) == 0, "get_async_event errno %d", errno);
		ibv_ack_async_event(&aev);
	} while (aev.event_type != IBV_EVENT_CQ_ERR && ++seen < 10);
	CHECK(aev.event_type == IBV_EVENT_CQ_ERR && aev.element.cq == small, "async event %s on %p, expected %s on %p",
	      ibv_event_type_str(aev.event_type), (void *)aev.element.cq, ibv_event_type_str(IBV_EVENT_CQ_ERR),
	      (void *)small);
	printf("async event: %s on the CQ of cqe %d after %d WRITEs\n", ibv_event_type_str(aev.event_type), small->cqe,
	       writes);
	CHECK(ibv_destroy_qp(qo) == 0 && ibv_destroy_qp(qq) == 0 && ibv_destroy_cq(small) == 0 && ibv_dereg_mr(md) == 0,
	      "destroy the overrun's objects");

	CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0 && (!two || ibv_destroy_cq(cqb) == 0), "destroy_cq");
	CHECK(ibv_dereg_mr(ma) == 0 && ibv_dereg_mr(mb) == 0 && ibv_dereg_mr(mc) == 0, "dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0 && (!two || ibv_dealloc_pd(pdb) == 0), "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0 && (!two || ibv_close_device(ctxb) == 0), "close_device");
	printf("PASS\n");
	return 0;
}
