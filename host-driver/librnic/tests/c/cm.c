/* The connection manager through librdmacm's C API, compiled against rdma-core's
 * <rdma/rdma_cma.h> and linked with -lrdmacm -libverbs, run on librnic with RNIC_DEVICE=sim:2
 * (two NICs of one world, cabled back to back: 192.0.2.1 and 192.0.2.2). One process, one
 * thread, one event channel: a listener on 192.0.2.2 and clients on 192.0.2.1.
 *
 *  - address and route resolution: ADDR_RESOLVED, ROUTE_RESOLVED, the id's verbs, addresses,
 *    ports and path record;
 *  - connect with private data and rdma_create_qp: CONNECT_REQUEST on a new id (listen_id,
 *    context inherited, the REQ's QPN and resources, the private data), accept with private
 *    data, ESTABLISHED on both sides (the client's with the REP's private data);
 *  - a SEND and an RDMA WRITE on the connected QPs, checked byte for byte;
 *  - a connect to a port nobody listens on: REJECTED, status 8 (invalid service ID); a
 *    rejected request: REJECTED, status 28, with the server's private data;
 *  - rdma_disconnect: DISCONNECTED on both sides, the QP's receives flushed;
 *  - the channel fd: readable (poll) exactly while events wait; non-blocking after O_NONBLOCK
 *    (EAGAIN); a listener whose channel was destroyed rejects its requests;
 *  - a synchronous id (no channel), from a second thread: rdma_resolve_addr /
 *    rdma_resolve_route / rdma_connect return when their event has come;
 *  - rdma_getaddrinfo, active and passive;
 *  - refusals: RDMA_PS_UDP ids, rdma_bind_addr to an address no device has, rdma_connect
 *    without a QP.
 * Prints "PASS" and exits 0, or names the first failure and exits 1. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#include "common.h"

#define SIZE 4096

static struct rdma_event_channel *ch;

/* The next event of the channel, which must be `want`. */
static struct rdma_cm_event *expect(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	CHECK(rdma_get_cm_event(ch, &ev) == 0, "rdma_get_cm_event: %s", strerror(errno));
	CHECK(ev->event == want, "got %s (status %d), wanted %s", rdma_event_str(ev->event), ev->status,
	      rdma_event_str(want));
	return ev;
}

static struct sockaddr_in addr(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

struct side {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;
};

static void setup(struct side *s, struct rdma_cm_id *id)
{
	CHECK(id->verbs, "the id has no verbs context");
	s->pd = ibv_alloc_pd(id->verbs);
	s->cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
	s->buf = calloc(1, SIZE);
	CHECK(s->pd && s->cq && s->buf, "pd/cq");
	s->mr = ibv_reg_mr(s->pd, s->buf, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(s->mr, "reg_mr: %s", strerror(errno));
	struct ibv_qp_init_attr qa = { .send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } };
	CHECK(rdma_create_qp(id, s->pd, &qa) == 0, "rdma_create_qp: %s", strerror(errno));
	CHECK(id->qp && id->qp->qp_num > 1 && id->qp->state == IBV_QPS_INIT, "the QP is not in INIT");
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = 64, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;
	CHECK(ibv_post_recv(id->qp, &wr, &bad) == 0, "post_recv before the connection");
}

/* A synchronous client: every call returns once its event has come. */
static void *sync_client(void *arg)
{
	struct rdma_cm_id *id;
	struct sockaddr_in dst = addr("192.0.2.2", 7473);
	struct side s;
	CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0, "sync create_id");
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000) == 0, "sync resolve_addr: %s", strerror(errno));
	CHECK(rdma_resolve_route(id, 1000) == 0, "sync resolve_route");
	setup(&s, id);
	CHECK(rdma_connect(id, NULL) == 0, "sync connect: %s", strerror(errno));
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	CHECK(ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_RTS,
	      "the synchronous connect returned before RTS");
	*(int *)arg = 1;
	return id;
}

int main(void)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *listener, *client, *server;
	int ctx_tag = 42;

	/* Refusals. */
	CHECK(rdma_create_id(NULL, &client, NULL, RDMA_PS_UDP) == -1 && errno == EOPNOTSUPP, "UDP id accepted");
	/* rdma_getaddrinfo: an active lookup gives the destination, a passive one the source. */
	struct rdma_addrinfo *ai, hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	CHECK(rdma_getaddrinfo("192.0.2.2", "7471", NULL, &ai) == 0, "rdma_getaddrinfo");
	CHECK(ai->ai_family == AF_INET && ai->ai_qp_type == IBV_QPT_RC && ai->ai_port_space == RDMA_PS_TCP &&
	      ai->ai_dst_addr && !ai->ai_src_addr && ai->ai_dst_len == sizeof(struct sockaddr_in), "active addrinfo");
	CHECK(((struct sockaddr_in *)ai->ai_dst_addr)->sin_port == htons(7471) &&
	      ((struct sockaddr_in *)ai->ai_dst_addr)->sin_addr.s_addr == htonl(0xc0000202), "active address");
	rdma_freeaddrinfo(ai);
	CHECK(rdma_getaddrinfo(NULL, "7471", &hints, &ai) == 0 && ai->ai_src_addr && !ai->ai_dst_addr &&
	      ((struct sockaddr_in *)ai->ai_src_addr)->sin_addr.s_addr == 0, "passive addrinfo");
	rdma_freeaddrinfo(ai);
	CHECK(rdma_getaddrinfo("192.0.2.2", "no-such-port", NULL, &ai) != 0, "a bad service");

	ch = rdma_create_event_channel();
	CHECK(ch && ch->fd >= 0, "rdma_create_event_channel");
	CHECK(rdma_create_id(ch, &listener, &ctx_tag, RDMA_PS_TCP) == 0, "create listener");
	struct sockaddr_in bad = addr("10.9.9.9", 7471);
	CHECK(rdma_bind_addr(listener, (struct sockaddr *)&bad) == -1 && errno == EADDRNOTAVAIL, "bound to 10.9.9.9");
	struct sockaddr_in la = addr("192.0.2.2", 7471);
	CHECK(rdma_bind_addr(listener, (struct sockaddr *)&la) == 0, "bind: %s", strerror(errno));
	CHECK(rdma_listen(listener, 4) == 0, "listen");
	CHECK(rdma_get_src_port(listener) == htons(7471), "src port");

	/* Nothing queued: the fd is not readable; non-blocking get fails with EAGAIN. */
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	CHECK(poll(&pfd, 1, 0) == 0, "fd readable with no event");
	int fl = fcntl(ch->fd, F_GETFL);
	CHECK(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) == 0, "O_NONBLOCK");
	CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN, "non-blocking get: %s", strerror(errno));
	CHECK(fcntl(ch->fd, F_SETFL, fl) == 0, "blocking again");

	/* Client: resolve. */
	CHECK(rdma_create_id(ch, &client, NULL, RDMA_PS_TCP) == 0, "create client");
	struct sockaddr_in dst = addr("192.0.2.2", 7471);
	CHECK(rdma_resolve_addr(client, NULL, (struct sockaddr *)&dst, 2000) == 0, "resolve_addr");
	CHECK(poll(&pfd, 1, 5000) == 1 && (pfd.revents & POLLIN), "fd not readable with ADDR_RESOLVED queued");
	ev = expect(RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(ev->id == client && ev->status == 0, "ADDR_RESOLVED id/status");
	rdma_ack_cm_event(ev);
	struct sockaddr_in *src = (struct sockaddr_in *)rdma_get_local_addr(client);
	char ip[32];
	inet_ntop(AF_INET, &src->sin_addr, ip, sizeof ip);
	CHECK(!strcmp(ip, "192.0.2.1") && rdma_get_src_port(client) != 0, "local address %s", ip);
	CHECK(rdma_get_dst_port(client) == htons(7471), "dst port");
	CHECK(client->verbs && client->verbs != listener->verbs, "client and listener on different devices");
	CHECK(rdma_resolve_route(client, 2000) == 0, "resolve_route");
	ev = expect(RDMA_CM_EVENT_ROUTE_RESOLVED);
	rdma_ack_cm_event(ev);
	CHECK(client->route.num_paths == 1 && client->route.path_rec->mtu == IBV_MTU_4096, "path record");
	printf("route: %s -> 192.0.2.2, MTU %d\n", ip, 128 << client->route.path_rec->mtu);

	/* Connect with private data. */
	struct side cs, ss;
	setup(&cs, client);
	struct rdma_conn_param cp = { .private_data = "hello", .private_data_len = 6, .responder_resources = 1,
				      .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7 };
	CHECK(rdma_connect(client, &cp) == 0, "connect: %s", strerror(errno));
	ev = expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	server = ev->id;
	CHECK(ev->listen_id == listener && server != listener, "listen_id");
	CHECK(server->context == &ctx_tag, "the new id did not inherit the listener's context");
	CHECK(ev->param.conn.private_data_len >= 6 && !memcmp(ev->param.conn.private_data, "hello", 6),
	      "REQ private data");
	CHECK(ev->param.conn.qp_num == client->qp->qp_num, "REQ QPN %u", ev->param.conn.qp_num);
	CHECK(ev->param.conn.initiator_depth == 1 && ev->param.conn.responder_resources == 1, "REQ resources");
	rdma_ack_cm_event(ev);
	CHECK(server->verbs == listener->verbs, "server verbs");
	setup(&ss, server);
	/* The server advertises its buffer's address and rkey in the REP's private data. */
	uint64_t adv[2] = { (uintptr_t)ss.buf, ss.mr->rkey };
	struct rdma_conn_param sp = { .private_data = adv, .private_data_len = sizeof adv, .responder_resources = 1,
				      .initiator_depth = 1, .rnr_retry_count = 7 };
	CHECK(rdma_accept(server, &sp) == 0, "accept: %s", strerror(errno));
	int established = 0;
	uint64_t remote[2] = { 0, 0 };
	while (established < 2) {
		ev = expect(RDMA_CM_EVENT_ESTABLISHED);
		if (ev->id == client) {
			CHECK(ev->param.conn.private_data_len >= sizeof adv, "REP private data length");
			memcpy(remote, ev->param.conn.private_data, sizeof remote);
		} else {
			CHECK(ev->id == server, "ESTABLISHED on an unknown id");
		}
		established++;
		rdma_ack_cm_event(ev);
	}
	CHECK(remote[0] == adv[0] && remote[1] == adv[1], "the advertisement arrived changed");
	printf("established: QPN %u <-> %u\n", client->qp->qp_num, server->qp->qp_num);

	/* A SEND and an RDMA WRITE through the connection. */
	strcpy(cs.buf + 1024, "ping over rdma_cm");
	struct ibv_sge sge = { .addr = (uintptr_t)cs.buf + 1024, .length = 18, .lkey = cs.mr->lkey };
	struct ibv_send_wr sw = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bads;
	CHECK(ibv_post_send(client->qp, &sw, &bads) == 0, "post_send");
	struct ibv_wc wc = poll_one(ss.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == 18 && wc.wr_id == 7,
	      "recv: status %d byte_len %u", wc.status, wc.byte_len);
	CHECK(!strcmp(ss.buf, "ping over rdma_cm"), "SEND payload");
	wc = poll_one(cs.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND, "send completion");
	for (int i = 0; i < 256; i++)
		cs.buf[2048 + i] = (char)i;
	sge.addr = (uintptr_t)cs.buf + 2048;
	sge.length = 256;
	sw.opcode = IBV_WR_RDMA_WRITE;
	sw.wr.rdma.remote_addr = remote[0] + 512;
	sw.wr.rdma.rkey = (uint32_t)remote[1];
	CHECK(ibv_post_send(client->qp, &sw, &bads) == 0, "post write");
	wc = poll_one(cs.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE, "write completion %d", wc.status);
	CHECK(!memcmp(ss.buf + 512, cs.buf + 2048, 256), "RDMA WRITE data");
	printf("send and write: verified\n");

	/* No listener on 7472: REJECTED, reason 8. */
	struct rdma_cm_id *stray;
	struct side xs;
	CHECK(rdma_create_id(ch, &stray, NULL, RDMA_PS_TCP) == 0, "create stray");
	struct sockaddr_in nobody = addr("192.0.2.2", 7472);
	CHECK(rdma_resolve_addr(stray, NULL, (struct sockaddr *)&nobody, 2000) == 0, "resolve 7472");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ADDR_RESOLVED));
	CHECK(rdma_connect(stray, NULL) == -1, "connect before the route");
	CHECK(rdma_resolve_route(stray, 2000) == 0, "route 7472");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ROUTE_RESOLVED));
	CHECK(rdma_connect(stray, NULL) == -1 && errno == EOPNOTSUPP, "connect without a QP");
	setup(&xs, stray);
	CHECK(rdma_connect(stray, NULL) == 0, "connect 7472");
	ev = expect(RDMA_CM_EVENT_REJECTED);
	CHECK(ev->id == stray && ev->status == 8, "REJECTED status %d", ev->status);
	rdma_ack_cm_event(ev);
	printf("no listener: REJECTED status 8\n");

	/* A rejected request: status 28 and the server's private data. */
	struct rdma_cm_id *l2, *c2;
	struct side c2s;
	CHECK(rdma_create_id(ch, &l2, NULL, RDMA_PS_TCP) == 0, "l2");
	struct sockaddr_in l2a = addr("0.0.0.0", 7474);
	CHECK(rdma_bind_addr(l2, (struct sockaddr *)&l2a) == 0, "bind any");
	CHECK(rdma_listen(l2, 1) == 0, "listen 7474");
	CHECK(rdma_create_id(ch, &c2, NULL, RDMA_PS_TCP) == 0, "c2");
	/* 0.0.0.0 is the first device (192.0.2.1); the client, naming no source, goes out of the
	 * other one. */
	struct sockaddr_in l2dst = addr("192.0.2.1", 7474);
	CHECK(rdma_resolve_addr(c2, NULL, (struct sockaddr *)&l2dst, 2000) == 0, "resolve 7474");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ADDR_RESOLVED));
	CHECK(rdma_resolve_route(c2, 2000) == 0, "route 7474");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ROUTE_RESOLVED));
	setup(&c2s, c2);
	CHECK(rdma_connect(c2, NULL) == 0, "connect 7474");
	ev = expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	struct rdma_cm_id *r2 = ev->id;
	rdma_ack_cm_event(ev);
	CHECK(rdma_reject(r2, "busy", 5) == 0, "reject");
	ev = expect(RDMA_CM_EVENT_REJECTED);
	CHECK(ev->id == c2 && ev->status == 28 && ev->param.conn.private_data_len >= 5 &&
	      !memcmp(ev->param.conn.private_data, "busy", 5), "REJECTED status %d", ev->status);
	rdma_ack_cm_event(ev);
	printf("rejected: status 28, private data \"busy\"\n");

	/* A synchronous client (no channel) in a thread; this thread serves it. */
	struct rdma_cm_id *l3;
	CHECK(rdma_create_id(ch, &l3, NULL, RDMA_PS_TCP) == 0, "l3");
	struct sockaddr_in l3a = addr("192.0.2.2", 7473);
	CHECK(rdma_bind_addr(l3, (struct sockaddr *)&l3a) == 0 && rdma_listen(l3, 1) == 0, "listen 7473");
	pthread_t t;
	int done = 0;
	pthread_create(&t, NULL, sync_client, &done);
	ev = expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	struct rdma_cm_id *r3 = ev->id;
	rdma_ack_cm_event(ev);
	struct side s3;
	setup(&s3, r3);
	CHECK(rdma_accept(r3, NULL) == 0, "accept sync");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ESTABLISHED));
	void *sync_id;
	pthread_join(t, &sync_id);
	CHECK(done, "the synchronous client did not finish");
	printf("synchronous client: connected\n");

	/* Disconnect: both sides; the client's posted receive is flushed. */
	CHECK(rdma_disconnect(client) == 0, "disconnect");
	int disc = 0;
	while (disc < 2) {
		ev = expect(RDMA_CM_EVENT_DISCONNECTED);
		CHECK(ev->id == client || ev->id == server, "DISCONNECTED id");
		disc++;
		rdma_ack_cm_event(ev);
	}
	wc = poll_one(cs.cq);
	CHECK(wc.status == IBV_WC_WR_FLUSH_ERR, "client receive after disconnect: status %d", wc.status);
	printf("disconnected: both sides\n");

	/* A listener whose channel the program destroyed takes no request: the client is
	 * rejected, nothing is queued on freed memory. */
	struct rdma_event_channel *ch2 = rdma_create_event_channel();
	struct rdma_cm_id *l4, *c4;
	struct side c4s;
	CHECK(ch2 && rdma_create_id(ch2, &l4, NULL, RDMA_PS_TCP) == 0, "l4");
	struct sockaddr_in l4a = addr("192.0.2.2", 7475);
	CHECK(rdma_bind_addr(l4, (struct sockaddr *)&l4a) == 0 && rdma_listen(l4, 1) == 0, "listen 7475");
	rdma_destroy_event_channel(ch2);
	CHECK(rdma_create_id(ch, &c4, NULL, RDMA_PS_TCP) == 0, "c4");
	struct sockaddr_in l4dst = addr("192.0.2.2", 7475);
	CHECK(rdma_resolve_addr(c4, NULL, (struct sockaddr *)&l4dst, 2000) == 0, "resolve 7475");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ADDR_RESOLVED));
	CHECK(rdma_resolve_route(c4, 2000) == 0, "route 7475");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ROUTE_RESOLVED));
	setup(&c4s, c4);
	CHECK(rdma_connect(c4, NULL) == 0, "connect 7475");
	ev = expect(RDMA_CM_EVENT_REJECTED);
	printf("listener without a channel: REJECTED status %d\n", ev->status);
	rdma_ack_cm_event(ev);
	CHECK(rdma_destroy_id(l4) == 0 && rdma_destroy_id(c4) == 0, "destroy l4, c4");

	rdma_destroy_qp(client);
	CHECK(client->qp == NULL, "rdma_destroy_qp left id->qp");
	ibv_destroy_qp(server->qp); /* as rping does: the QP, then the id */
	CHECK(rdma_destroy_id(client) == 0 && rdma_destroy_id(server) == 0, "destroy ids");
	CHECK(rdma_destroy_id(stray) == 0 && rdma_destroy_id(c2) == 0 && rdma_destroy_id(r2) == 0, "destroy");
	CHECK(rdma_destroy_id(listener) == 0 && rdma_destroy_id(l2) == 0, "destroy listeners");
	rdma_destroy_event_channel(ch);
	printf("PASS\n");
	return 0;
}
