/* What librnic's C tests share: CHECK (names the failing line, exits 1) and poll_one (the next
 * completion of a CQ, or a failure after 20 million empty polls). */
#ifndef RNIC_TESTS_COMMON_H
#define RNIC_TESTS_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <infiniband/verbs.h>

#define CHECK(c, ...) do { if (!(c)) { printf("FAIL line %d: ", __LINE__); printf(__VA_ARGS__); printf("\n"); exit(1); } } while (0)

static __attribute__((unused)) struct ibv_wc poll_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	for (long i = 0; i < 20000000; i++) {
		int n = ibv_poll_cq(cq, 1, &wc);
		CHECK(n >= 0, "ibv_poll_cq returned %d", n);
		if (n == 1)
			return wc;
	}
	CHECK(0, "no completion");
	return wc;
}

#endif
