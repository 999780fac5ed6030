/* UD QPs and address handles through the verbs C ABI: an ordinary verbs program, compiled
 * against rdma-core's <infiniband/verbs.h> and linked with -libverbs, run on librnic. QP A (on
 * device 0) and QP B (on device 0 too with no argument, RNIC_DEVICE=sim: the port is looped
 * back; on device 1 with "two", RNIC_DEVICE=sim:2) are UD QPs with Q_Key 0x11111111. A sends B
 * a datagram through an address handle of B's IPv4-mapped GID; B's completion must be
 * IBV_WC_RECV with IBV_WC_GRH, byte_len = payload + 40, src_qp = A's QPN, the payload 40 bytes
 * into the buffer and the IPv4 header (A -> B) in the last 20 bytes of the GRH area. B answers
 * through ibv_create_ah_from_wc with an inline SEND with immediate. A datagram with the wrong
 * Q_Key is dropped. Also checked: ibv_query_device's max_ah, ibv_query_qp's qkey and qp_type,
 * the UD modify rules (RESET -> INIT needs IBV_QP_QKEY), refused address vectors (not global,
 * unknown peer) and a UD send without an AH (bad_wr). Prints "PASS" and exits 0, or names the
 * first failure and exits 1. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "common.h"

#define QKEY 0x11111111
#define GRH 40
#define PAYLOAD 1000
#define BUF 4096

static void to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = QKEY };
	/* RESET -> INIT of a UD QP needs its Q_Key (IBTA Vol 1 Table 91, ibv_modify_qp(3)). */
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT) == EINVAL, "INIT without QKEY");
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0, "to INIT");
	a.qp_state = IBV_QPS_RTR;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x123;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0, "to RTS");
	CHECK(qp->state == IBV_QPS_RTS, "qp->state %d", qp->state);
}

static void post_recv(struct ibv_qp *qp, char *buf, struct ibv_mr *mr, uint64_t id)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = BUF, .lkey = mr->lkey };
	struct ibv_recv_wr r = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;
	CHECK(ibv_post_recv(qp, &r, &bad) == 0, "post_recv");
}

static struct ibv_ah *ah_to(struct ibv_pd *pd, union ibv_gid *gid)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .dgid = *gid, .sgid_index = 1, .hop_limit = 64 } };
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);
	CHECK(ah && ah->pd == pd && ah->context == pd->context, "create_ah errno %d", errno);
	return ah;
}

static void send_to(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, char *buf, struct ibv_mr *mr,
		    uint64_t id)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = PAYLOAD, .lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED }, *bad = NULL;
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = qpn;
	w.wr.ud.remote_qkey = qkey;
	CHECK(ibv_post_send(qp, &w, &bad) == 0, "post UD SEND errno");
}

int main(int argc, char **argv)
{
	int n, two = argc > 1 && strcmp(argv[1], "two") == 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	CHECK(list && n >= 1 + two, "device list (%d)", n);
	struct ibv_context *ctx = ibv_open_device(list[0]);
	struct ibv_context *ctxb = two ? ibv_open_device(list[1]) : ctx;
	CHECK(ctx && ctxb, "ibv_open_device errno %d", errno);
	ibv_free_device_list(list);
	struct ibv_device_attr da;
	CHECK(ibv_query_device(ctx, &da) == 0 && da.max_ah > 0, "max_ah %d", da.max_ah);
	printf("max_ah %d\n", da.max_ah);
	union ibv_gid gida, gidb;
	CHECK(ibv_query_gid(ctx, 1, 1, &gida) == 0 && ibv_query_gid(ctxb, 1, 1, &gidb) == 0, "query_gid");

	struct ibv_pd *pd = ibv_alloc_pd(ctx), *pdb = two ? ibv_alloc_pd(ctxb) : pd;
	CHECK(pd && pdb, "alloc_pd");
	char *a = aligned_alloc(4096, BUF), *b = aligned_alloc(4096, BUF);
	for (int i = 0; i < BUF; i++) {
		a[i] = (char)(i * 7 + 3);
		b[i] = 0x5a;
	}
	struct ibv_mr *ma = ibv_reg_mr(pd, a, BUF, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mb = ibv_reg_mr(pdb, b, BUF, IBV_ACCESS_LOCAL_WRITE);
	CHECK(ma && mb, "reg_mr errno %d", errno);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0), *cqb = two ? ibv_create_cq(ctxb, 16, NULL, NULL, 0) : cq;
	CHECK(cq && cqb, "create_cq");
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .cap = { .max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 64 }, .qp_type = IBV_QPT_UD };
	struct ibv_qp *qa = ibv_create_qp(pd, &ia);
	ia.send_cq = ia.recv_cq = cqb;
	struct ibv_qp *qb = ibv_create_qp(pdb, &ia);
	CHECK(qa && qb && qa->qp_type == IBV_QPT_UD, "create UD QP errno %d", errno);
	struct ibv_qp_init_attr uc = ia;
	uc.qp_type = IBV_QPT_UC;
	CHECK(ibv_create_qp(pd, &uc) == NULL && errno == EOPNOTSUPP, "UC QP: EOPNOTSUPP (errno %d)", errno);
	to_rts(qa);
	to_rts(qb);
	struct ibv_qp_attr qattr;
	struct ibv_qp_init_attr qinit;
	CHECK(ibv_query_qp(qa, &qattr, IBV_QP_STATE | IBV_QP_QKEY, &qinit) == 0 && qattr.qp_state == IBV_QPS_RTS &&
	      qattr.qkey == QKEY && qinit.qp_type == IBV_QPT_UD, "query_qp: qkey %#x type %d", qattr.qkey, qinit.qp_type);

	/* Refused address vectors: LID-routed (RoCE needs the GRH), and a peer nobody knows. */
	struct ibv_ah_attr lid = { .dlid = 1, .port_num = 1 };
	CHECK(ibv_create_ah(pd, &lid) == NULL && errno == EINVAL, "a non-global AH: EINVAL (errno %d)", errno);
	struct ibv_ah_attr far = { .is_global = 1, .port_num = 1, .grh = { .dgid = gidb, .sgid_index = 1 } };
	far.grh.dgid.raw[15] = 255; /* no answer to ARP, and outside the simulator's MAC rule */
	CHECK(ibv_create_ah(pd, &far) == NULL && errno == EINVAL, "an AH to an unknown peer: EINVAL (errno %d)", errno);

	/* A -> B with the wrong Q_Key (dropped), then with the right one. */
	post_recv(qb, b, mb, 100);
	struct ibv_ah *ah = ah_to(pd, &gidb);
	send_to(qa, ah, qb->qp_num, 0x2222, a + 1, ma, 1);
	send_to(qa, ah, qb->qp_num, QKEY, a, ma, 2);
	struct ibv_wc wc = poll_one(cq);
	if (!two && wc.wr_id == 100) {
		/* One CQ: B's receive may come before A's send completions. */
		struct ibv_wc first = wc;
		CHECK(poll_one(cq).wr_id == 1 && poll_one(cq).wr_id == 2, "send completions");
		wc = first;
	} else {
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == 1, "send 1: %s opcode %d",
		      ibv_wc_status_str(wc.status), wc.opcode);
		wc = poll_one(cq);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == 2, "send 2");
		wc = poll_one(cqb);
	}
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id == 100, "recv: %s opcode %d wr_id %llu",
	      ibv_wc_status_str(wc.status), wc.opcode, (unsigned long long)wc.wr_id);
	CHECK(wc.byte_len == PAYLOAD + GRH && (wc.wc_flags & IBV_WC_GRH) && !(wc.wc_flags & IBV_WC_WITH_IMM) &&
	      wc.src_qp == qa->qp_num && wc.qp_num == qb->qp_num, "recv: byte_len %u flags %#x src_qp %u qp_num %u",
	      wc.byte_len, wc.wc_flags, wc.src_qp, wc.qp_num);
	/* The message with the right Q_Key (sent from a, not a + 1). */
	CHECK(memcmp(b + GRH, a, PAYLOAD) == 0, "payload");
	CHECK(b[GRH + PAYLOAD] == 0x5a, "a byte after the payload was written");
	/* The IPv4 header of the packet in the GRH area's last 20 bytes: A's address to B's. */
	CHECK((b[20] & 0xf0) == 0x40 && memcmp(b + 20 + 12, gida.raw + 12, 4) == 0 &&
	      memcmp(b + 20 + 16, gidb.raw + 12, 4) == 0, "IPv4 header in the GRH area");
	printf("recv: byte_len %u, IBV_WC_GRH, src_qp %u\n", wc.byte_len, wc.src_qp);

	/* B answers the sender of that completion: an AH from the WC and the GRH, an inline SEND
	 * with immediate to src_qp with the QP's own Q_Key (bit 31 of remote_qkey). */
	struct ibv_ah_attr back;
	CHECK(ibv_init_ah_from_wc(ctxb, 1, &wc, (struct ibv_grh *)b, &back) == 0 && back.is_global &&
	      memcmp(back.grh.dgid.raw, gida.raw, 16) == 0 && back.grh.sgid_index == 1, "init_ah_from_wc errno %d", errno);
	struct ibv_ah *ahb = ibv_create_ah_from_wc(pdb, &wc, (struct ibv_grh *)b, 1);
	CHECK(ahb, "create_ah_from_wc errno %d", errno);
	struct ibv_wc nogrh = wc;
	nogrh.wc_flags = 0;
	CHECK(ibv_create_ah_from_wc(pdb, &nogrh, (struct ibv_grh *)b, 1) == NULL && errno == EINVAL, "AH from a WC without GRH");
	memset(a, 0, BUF);
	post_recv(qa, a, ma, 200);
	char msg[] = "pong from B";
	struct ibv_sge s = { .addr = (uintptr_t)msg, .length = sizeof msg };
	struct ibv_send_wr w = { .wr_id = 3, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE, .imm_data = htonl(0xabcd) }, *bad = NULL;
	w.wr.ud.ah = ahb;
	w.wr.ud.remote_qpn = wc.src_qp;
	w.wr.ud.remote_qkey = 0x80000000;
	CHECK(ibv_post_send(qb, &w, &bad) == 0, "post the answer");
	int got_send = 0, got_recv = 0;
	while (!got_send || !got_recv) {
		wc = poll_one(two ? (got_send ? cq : cqb) : cq);
		if (wc.wr_id == 3) {
			CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND, "answer sent");
			got_send = 1;
		} else {
			CHECK(wc.wr_id == 200 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV, "answer received");
			CHECK(wc.byte_len == sizeof msg + GRH && wc.wc_flags == (IBV_WC_GRH | IBV_WC_WITH_IMM) &&
			      ntohl(wc.imm_data) == 0xabcd && wc.src_qp == qb->qp_num, "answer: len %u flags %#x src_qp %u",
			      wc.byte_len, wc.wc_flags, wc.src_qp);
			CHECK(memcmp(a + GRH, msg, sizeof msg) == 0, "answer payload");
			got_recv = 1;
		}
	}
	printf("answer: imm 0x%x from QP %u\n", ntohl(wc.imm_data), wc.src_qp);

	/* A UD SEND without an AH is refused at the post: bad_wr is the WR. */
	w.wr.ud.ah = NULL;
	CHECK(ibv_post_send(qb, &w, &bad) == EINVAL && bad == &w, "UD SEND without an AH");

	CHECK(ibv_destroy_ah(ah) == 0 && ibv_destroy_ah(ahb) == 0, "destroy_ah");
	CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0 && (!two || ibv_destroy_cq(cqb) == 0), "destroy_cq");
	CHECK(ibv_dereg_mr(ma) == 0 && ibv_dereg_mr(mb) == 0, "dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0 && (!two || ibv_dealloc_pd(pdb) == 0), "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0 && (!two || ibv_close_device(ctxb) == 0), "close_device");
	printf("PASS\n");
	return 0;
}
