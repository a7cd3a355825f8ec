// SPDX-License-Identifier: GPL-2.0
/*
 * rxe-odp-offset: does data moved through an on-demand-paging (ODP) MR land
 * at its offset in the page? A stand-alone reproducer, no pinmatrix needed.
 *
 *   cc -O2 -o rxe-odp-offset tools/rxe-odp-offset.c -libverbs
 *   modprobe rdma_rxe && rdma link add rxe0 type rxe netdev lo   (as root)
 *   ./rxe-odp-offset [DEVICE]
 *
 * One RC queue pair connected to itself on the first port. Each transfer
 * moves bytes that differ at every offset between an ordinary MR and an MR
 * of two pages: RDMA WRITE into it and RDMA READ out of it, one packet (1
 * KiB, the path MTU) at an offset in a page, several packets from a page's
 * start, one across the pages' boundary. The two-page MR is ordinary first
 * (the control), then IBV_ACCESS_ON_DEMAND. Prints one line per transfer;
 * exit 0 all landed where they were sent, 1 one did not, 2 no ODP or setup
 * failed.
 *
 * On Linux 7.2 (rxe with ODP, drivers/infiniband/sw/rxe/rxe_odp.c)
 * __rxe_odp_mr_copy() copies at the start of the kmap_local_page() mapping,
 * without the offset in the page it computed.
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096u

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;

static void __attribute__((noreturn)) die(const char *what)
{
	perror(what);
	exit(2);
}

static void connect_to_self(uint8_t port)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	union ibv_gid gid;
	int idx;

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT");
	for (idx = 0; idx < 16; idx++)	/* the first GID set */
		if (!ibv_query_gid(ctx, port, idx, &gid) && (gid.global.subnet_prefix || gid.global.interface_id))
			break;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = idx;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = port;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

/* One RDMA WRITE or READ between local (in lmr) and remote (in rmr); its status. */
static int transfer(enum ibv_wr_opcode op, struct ibv_mr *lmr, char *local, struct ibv_mr *rmr,
		    char *remote, uint32_t n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = n, .lkey = lmr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int i, got = 0;

	wr.wr.rdma.remote_addr = (uintptr_t)remote;
	wr.wr.rdma.rkey = rmr->rkey;
	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send");
	for (i = 0; i < 50000 && !(got = ibv_poll_cq(cq, 1, &wc)); i++)
		usleep(100);
	return got == 1 ? (int)wc.status : -1;
}

/* Where n bytes of want are in [buf, buf + size): their offset, or -1. */
static long found_at(const char *buf, size_t size, const char *want, uint32_t n)
{
	size_t at;

	for (at = 0; at + n <= size; at++)
		if (!memcmp(buf + at, want, n))
			return (long)at;
	return -1;
}

/* Bytes that differ from offset to offset (xorshift): a packet's are found once. */
static void fill_distinct(char *buf, size_t size)
{
	static uint32_t x = 2463534242u;
	size_t i;

	for (i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (char)x;
	}
}

/*
 * Each packet (path MTU, 1 KiB) of a transfer that did not land where it was
 * sent: for a write, where in the ODP pages its bytes are; for a read, where
 * in the ODP pages the bytes it returned came from.
 */
static void explain(const char *odp_buf, const char *src, uint32_t offset, uint32_t n, int write)
{
	uint32_t k, len;
	long at;

	for (k = 0; k < n; k += len) {
		len = n - k < 1024 ? n - k : 1024;
		/* The plain buffer's bytes of this packet, in the ODP pages. */
		at = found_at(odp_buf, 2 * PAGE, src + offset + k, len);
		if (at == (long)(offset + k))
			printf(" [%u: ok]", offset + k);
		else if (at >= 0)
			printf(" [%u: %s %ld]", offset + k, write ? "landed at" : "read from", at);
		else
			printf(" [%u: %s]", offset + k, write ? "lost" : "bytes from nowhere in the MR");
	}
	printf("\n");
}

static int check(const char *what, struct ibv_mr *plain, char *src, struct ibv_mr *odp, char *odp_buf,
		 uint32_t offset, uint32_t n, int write)
{
	int status;

	/* The sender's pages distinct everywhere, the receiver's zero. */
	fill_distinct(write ? src : odp_buf, 2 * PAGE);
	memset(write ? odp_buf : src, 0, 2 * PAGE);
	status = transfer(write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ, plain, src + offset, odp,
			  odp_buf + offset, n);
	if (status) {
		printf("%-52s completion status %d (%s)\n", what, status,
		       status > 0 ? ibv_wc_status_str((enum ibv_wc_status)status) : "no completion in 5 s");
		return 1;
	}
	if (!memcmp(src + offset, odp_buf + offset, n)) {
		printf("%-52s ok\n", what);
		return 0;
	}
	printf("%-52s WRONG, per packet at its offset:", what);
	explain(odp_buf, src, offset, n, write);
	return 1;
}

int main(int argc, char **argv)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr_ex attr;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_mr *plain, *odp;
	char *src, *odp_buf;
	int i, odp_mode, bad = 0;

	for (i = 0; list && list[i]; i++)
		if (argc < 2 || !strcmp(ibv_get_device_name(list[i]), argv[1]))
			break;
	if (!list || !list[i]) {
		fprintf(stderr, "no RDMA device %s\n", argc > 1 ? argv[1] : "(ibv_get_device_list: none)");
		return 2;
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx || ibv_query_device_ex(ctx, NULL, &attr))
		die("ibv_open_device");
	if (!(attr.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
		fprintf(stderr, "%s: no on-demand paging (IBV_ODP_SUPPORT)\n", ibv_get_device_name(list[i]));
		return 2;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	qa.send_cq = qa.recv_cq = cq;
	qp = cq ? ibv_create_qp(pd, &qa) : NULL;
	if (!qp)
		die("ibv_create_qp");
	connect_to_self(1);
	src = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	odp_buf = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED || odp_buf == MAP_FAILED)
		die("mmap");
	plain = ibv_reg_mr(pd, src, 2 * PAGE, IBV_ACCESS_LOCAL_WRITE);
	if (!plain)
		die("ibv_reg_mr");
	/* The control first: the same transfers through an ordinary MR. */
	for (odp_mode = 0; odp_mode < 2; odp_mode++) {
		odp = ibv_reg_mr(pd, odp_buf, 2 * PAGE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ | (odp_mode ? IBV_ACCESS_ON_DEMAND : 0));
		if (!odp)
			die("ibv_reg_mr");
		printf("%s, path MTU 1024, %s MR of two pages:\n", ibv_get_device_name(list[i]),
		       odp_mode ? "an ODP (IBV_ACCESS_ON_DEMAND)" : "an ordinary");
		bad |= check("RDMA WRITE 1024 B at offset 2048 (one packet)", plain, src, odp, odp_buf, 2048, 1024, 1);
		bad |= check("RDMA READ 1024 B at offset 2048 (one packet)", plain, src, odp, odp_buf, 2048, 1024, 0);
		bad |= check("RDMA WRITE 4096 B at offset 0 (four packets)", plain, src, odp, odp_buf, 0, 4096, 1);
		bad |= check("RDMA WRITE 1024 B at offset 3584 (page boundary)", plain, src, odp, odp_buf, 3584, 1024, 1);
		bad |= check("RDMA WRITE 1024 B at offset 0 (one packet)", plain, src, odp, odp_buf, 0, 1024, 1);
		ibv_dereg_mr(odp);
	}
	return bad;
}
