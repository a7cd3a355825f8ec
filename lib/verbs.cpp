// SPDX-License-Identifier: GPL-2.0
#include "verbs.hpp"

#include <time.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <memory>

#include "clock.hpp"
#include "kernel_info.hpp"
#include "registration_observer.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

namespace {

struct device_list_deleter {
	void operator()(ibv_device **l) const { ibv_free_device_list(l); }
};

bool gid_is_zero(const ibv_gid &gid)
{
	static const ibv_gid zero{};
	return !std::memcmp(&gid, &zero, sizeof(gid));
}

// Why there is no RDMA device: where the running kernel has no Soft-RoCE
// to make one (no rdma_rxe built in or among its modules: Debian's cloud
// kernels), that; else how to make one.
std::string no_rdma_device_why()
{
	const std::string make_one = "no RDMA device (ibv_get_device_list found none; in a VM: modprobe rdma_rxe && "
				     "rdma link add rxe0 type rxe netdev <dev>)";
	const std::string release = read_kernel_info().release;
	const std::string dir = "/lib/modules/" + release + "/";
	bool read = false;
	for (const char *list : {"modules.builtin", "modules.dep"}) {
		std::ifstream in(dir + list);
		for (std::string line; std::getline(in, line);) {
			read = true;
			if (line.find("/rdma_rxe.ko") != std::string::npos)
				return make_one;
		}
	}
	if (!read)
		return make_one;
	return "no RDMA device (ibv_get_device_list found none), and kernel " + release +
	       " has no Soft-RoCE to make one (no rdma_rxe in " + dir + "modules.builtin or modules.dep: CONFIG_RDMA_RXE)";
}

} // namespace

verbs_device verbs_device::open(const std::string &name)
{
	int n = 0;
	std::unique_ptr<ibv_device *, device_list_deleter> list(ibv_get_device_list(&n));
	if (!list || n == 0)
		throw unmet_need(no_rdma_device_why());
	ibv_device *found = nullptr;
	for (int i = 0; i < n && !found; i++)
		if (name.empty() || name == ibv_get_device_name(list.get()[i]))
			found = list.get()[i];
	if (!found)
		throw unmet_need("RDMA device " + name + " not found");

	verbs_device dev;
	dev.name_ = ibv_get_device_name(found);
	dev.ctx_.reset(ibv_open_device(found));
	if (!dev.ctx_)
		throw last_sys_error("ibv_open_device " + dev.name_);
	dev.pd_.reset(ibv_alloc_pd(dev.ctx_.get()));
	if (!dev.pd_)
		throw last_sys_error("ibv_alloc_pd " + dev.name_);

	ibv_port_attr port{};
	if (int err = ibv_query_port(dev.ctx_.get(), dev.port_, &port))
		throw sys_error(err, "ibv_query_port " + dev.name_);
	// RoCE needs a GID for the loopback queue pairs: take the first one set.
	for (int i = 0; i < port.gid_tbl_len; i++) {
		ibv_gid gid{};
		if (ibv_query_gid(dev.ctx_.get(), dev.port_, i, &gid) || gid_is_zero(gid))
			continue;
		dev.gid_index_ = i;
		dev.gid_ = gid;
		break;
	}
	return dev;
}

registration register_memory(const verbs_device &dev, void *addr, size_t length, int access)
{
	registration reg;
	// Telemetry and trace markers of the case process (registration_observer.hpp).
	registration_observer *observer = current_registration_observer();
	const registration_call call{"ibv_reg_mr", dev.name(), reinterpret_cast<uintptr_t>(addr), length, access};
	if (observer)
		observer->before(call);
	errno = 0;
	int64_t t0 = monotonic_raw_ns();
	ibv_mr *mr = ibv_reg_mr(dev.pd(), addr, length, access);
	int64_t t1 = monotonic_raw_ns();
	reg.err = mr ? 0 : (errno ? errno : EIO);
	reg.latency_ns = t1 - t0;
	reg.mr.reset(mr);
	if (observer)
		observer->after(call, reg.err, reg.latency_ns);
	return reg;
}

namespace {

void modify_or_throw(ibv_qp *qp, ibv_qp_attr &attr, int mask, const char *what)
{
	if (int err = ibv_modify_qp(qp, &attr, mask))
		throw sys_error(err, std::string("ibv_modify_qp ") + what);
}

void connect(ibv_qp *qp, uint32_t remote_qpn, const verbs_device &dev)
{
	ibv_qp_attr attr{};
	attr.qp_state = IBV_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = dev.port();
	attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			       IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
	modify_or_throw(qp, attr,
			IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
			"INIT");

	attr = {};
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = IBV_MTU_1024;
	attr.dest_qp_num = remote_qpn;
	attr.rq_psn = 0;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.is_global = 1;
	attr.ah_attr.grh.dgid = dev.gid();
	attr.ah_attr.grh.sgid_index = uint8_t(dev.gid_index());
	attr.ah_attr.grh.hop_limit = 1;
	attr.ah_attr.port_num = dev.port();
	modify_or_throw(qp, attr,
			IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			"RTR");

	attr = {};
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = 0;
	attr.max_rd_atomic = 1;
	modify_or_throw(qp, attr,
			IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
			"RTS");
}

} // namespace

loopback_qp loopback_qp::create(const verbs_device &dev)
{
	if (dev.gid_index() < 0)
		throw unmet_need("RDMA device " + dev.name() + " has no GID: is its netdev up?");
	loopback_qp lb;
	lb.cq_.reset(ibv_create_cq(dev.context(), 16, nullptr, nullptr, 0));
	if (!lb.cq_)
		throw last_sys_error("ibv_create_cq");
	ibv_qp_init_attr init{};
	init.send_cq = lb.cq_.get();
	init.recv_cq = lb.cq_.get();
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 4;
	init.cap.max_recv_wr = 4;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	lb.sender_.reset(ibv_create_qp(dev.pd(), &init));
	if (!lb.sender_)
		throw last_sys_error("ibv_create_qp");
	lb.receiver_.reset(ibv_create_qp(dev.pd(), &init));
	if (!lb.receiver_)
		throw last_sys_error("ibv_create_qp");
	connect(lb.sender_.get(), lb.receiver_->qp_num, dev);
	connect(lb.receiver_.get(), lb.sender_->qp_num, dev);
	return lb;
}

const char *name(transfer_op op)
{
	switch (op) {
	case transfer_op::rdma_write:
		return "RDMA WRITE";
	case transfer_op::rdma_read:
		return "RDMA READ";
	case transfer_op::send:
		return "SEND";
	case transfer_op::fetch_add:
		return "ATOMIC FETCH_AND_ADD";
	case transfer_op::cmp_swap:
		return "ATOMIC CMP_AND_SWP";
	}
	return "?";
}

namespace {

ibv_wr_opcode opcode(transfer_op op)
{
	switch (op) {
	case transfer_op::rdma_write:
		return IBV_WR_RDMA_WRITE;
	case transfer_op::rdma_read:
		return IBV_WR_RDMA_READ;
	case transfer_op::send:
		return IBV_WR_SEND;
	case transfer_op::fetch_add:
		return IBV_WR_ATOMIC_FETCH_AND_ADD;
	case transfer_op::cmp_swap:
		return IBV_WR_ATOMIC_CMP_AND_SWP;
	}
	throw std::logic_error("transfer of no kind");
}

} // namespace

int loopback_qp::post(const ibv_send_wr &wr)
{
	ibv_send_wr w = wr;
	ibv_send_wr *bad = nullptr;
	return -ibv_post_send(sender_.get(), &w, &bad);
}

int loopback_qp::wait(int completions, std::chrono::milliseconds timeout)
{
	const int64_t deadline = monotonic_raw_ns() +
				 std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
	wc_status_ = IBV_WC_SUCCESS;
	for (int got = 0; got < completions;) {
		ibv_wc wc{};
		const int n = ibv_poll_cq(cq_.get(), 1, &wc);
		if (n < 0)
			return -EIO;
		if (n == 1) {
			got++;
			if (wc.status != IBV_WC_SUCCESS)
				wc_status_ = wc.status;
			continue;
		}
		if (monotonic_raw_ns() > deadline)
			return -ETIMEDOUT;
		struct timespec pause = {0, 100'000};
		nanosleep(&pause, nullptr);
	}
	return wc_status_ == IBV_WC_SUCCESS ? 0 : -EIO;
}

int loopback_qp::transfer(const transfer_request &t, std::chrono::milliseconds timeout)
{
	ibv_sge sge{};
	sge.addr = reinterpret_cast<uintptr_t>(t.local);
	sge.length = uint32_t(t.length);
	sge.lkey = t.local_mr->lkey;
	ibv_send_wr wr{};
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = opcode(t.op);
	wr.send_flags = IBV_SEND_SIGNALED;
	const uint64_t remote = reinterpret_cast<uintptr_t>(t.remote);
	if (t.op == transfer_op::fetch_add || t.op == transfer_op::cmp_swap) {
		wr.wr.atomic.remote_addr = remote;
		wr.wr.atomic.rkey = t.remote_mr->rkey;
		wr.wr.atomic.compare_add = t.compare_add;
		wr.wr.atomic.swap = t.swap;
	} else {
		wr.wr.rdma.remote_addr = remote;
		wr.wr.rdma.rkey = t.remote_mr->rkey;
	}
	if (t.op == transfer_op::send) {
		ibv_sge rsge{remote, uint32_t(t.length), t.remote_mr->lkey};
		ibv_recv_wr rwr{};
		rwr.wr_id = 2;
		rwr.sg_list = &rsge;
		rwr.num_sge = 1;
		ibv_recv_wr *bad = nullptr;
		if (int err = ibv_post_recv(receiver_.get(), &rwr, &bad))
			return -err;
	}
	if (int ret = post(wr))
		return ret;
	return wait(t.op == transfer_op::send ? 2 : 1, timeout);
}

int loopback_qp::rdma_write(const ibv_mr *local_mr, const void *local, size_t length,
			    uint64_t remote_addr, uint32_t remote_rkey,
			    std::chrono::milliseconds timeout)
{
	ibv_sge sge{};
	sge.addr = reinterpret_cast<uintptr_t>(local);
	sge.length = uint32_t(length);
	sge.lkey = local_mr->lkey;
	ibv_send_wr wr{};
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = remote_addr;
	wr.wr.rdma.rkey = remote_rkey;
	if (int ret = post(wr))
		return ret;
	return wait(1, timeout);
}

} // namespace pinmatrix
