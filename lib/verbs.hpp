// SPDX-License-Identifier: GPL-2.0
#pragma once

// The second pin: a real memory registration through libibverbs, on any
// device (rxe0 in the VM, mlx5_* on a node), and an RDMA WRITE through a
// loopback RC queue pair to check that the device's translation of a
// registered page is the page the CPU sees.

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace pinmatrix {

template <auto Fn> struct verbs_deleter {
	template <typename T> void operator()(T *p) const
	{
		if (p)
			Fn(p);
	}
};

using context_ptr = std::unique_ptr<ibv_context, verbs_deleter<ibv_close_device>>;
using pd_ptr = std::unique_ptr<ibv_pd, verbs_deleter<ibv_dealloc_pd>>;
using mr_ptr = std::unique_ptr<ibv_mr, verbs_deleter<ibv_dereg_mr>>;
using cq_ptr = std::unique_ptr<ibv_cq, verbs_deleter<ibv_destroy_cq>>;
using qp_ptr = std::unique_ptr<ibv_qp, verbs_deleter<ibv_destroy_qp>>;

class verbs_device {
public:
	// name empty: the first device. Throws unmet_need when there is none.
	static verbs_device open(const std::string &name);

	const std::string &name() const { return name_; }
	ibv_context *context() const { return ctx_.get(); }
	ibv_pd *pd() const { return pd_.get(); }
	uint8_t port() const { return port_; }
	int gid_index() const { return gid_index_; }
	const ibv_gid &gid() const { return gid_; }

private:
	std::string name_;
	context_ptr ctx_;
	pd_ptr pd_;
	uint8_t port_ = 1;
	int gid_index_ = -1;
	ibv_gid gid_{};
};

inline constexpr int registration_access =
	IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

struct registration {
	mr_ptr mr;		// null on failure
	int err = 0;		// errno of ibv_reg_mr, 0 on success
	int64_t latency_ns = 0;	// ibv_reg_mr alone, CLOCK_MONOTONIC_RAW
};

// ibv_reg_mr (-> ib_umem_get -> pin_user_pages_fast(FOLL_LONGTERM)).
registration register_memory(const verbs_device &dev, void *addr, size_t length,
			     int access = registration_access);

// What one loopback transfer does at its remote end.
enum class transfer_op {
	rdma_write,	// local -> remote
	rdma_read,	// remote -> local
	send,		// local -> a receive posted on remote
	fetch_add,	// 8 bytes: remote += add; local gets the old value
	cmp_swap,	// 8 bytes: remote = swap where it was compare; local gets the old value
};
const char *name(transfer_op op);	// "RDMA WRITE", "RDMA READ", "SEND", ...

struct transfer_request {
	transfer_op op;
	const ibv_mr *local_mr;
	void *local;		// [local, local + length) in local_mr
	size_t length;
	const ibv_mr *remote_mr;	// its rkey (RDMA, atomics) or lkey (the receive)
	void *remote;
	uint64_t compare_add = 0;	// atomics
	uint64_t swap = 0;
};

// Two RC queue pairs on one device connected to each other.
class loopback_qp {
public:
	static loopback_qp create(const verbs_device &dev);

	// One transfer from the first queue pair to the second, waited for:
	// 0 or -errno; -EIO when a completion reports an error (wc_status
	// holds it), -ETIMEDOUT when none came in time.
	int transfer(const transfer_request &t, std::chrono::milliseconds timeout);
	// RDMA WRITE of [local, local + length) (in local_mr) to remote_addr
	// (in the MR of remote_rkey), waits for its completion.
	int rdma_write(const ibv_mr *local_mr, const void *local, size_t length,
		       uint64_t remote_addr, uint32_t remote_rkey,
		       std::chrono::milliseconds timeout);
	int last_wc_status() const { return wc_status_; }

private:
	int post(const ibv_send_wr &wr);
	int wait(int completions, std::chrono::milliseconds timeout);

	cq_ptr cq_;
	qp_ptr sender_;
	qp_ptr receiver_;
	int wc_status_ = IBV_WC_SUCCESS;
};

} // namespace pinmatrix
