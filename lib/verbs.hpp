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

// Two RC queue pairs on one device connected to each other.
class loopback_qp {
public:
	static loopback_qp create(const verbs_device &dev);

	// RDMA WRITE of [local, local + length) (in local_mr) to remote_addr
	// (in the MR of remote_rkey), waits for its completion. 0 or -errno;
	// -EIO when the completion reports an error (wc_status holds it).
	int rdma_write(const ibv_mr *local_mr, const void *local, size_t length,
		       uint64_t remote_addr, uint32_t remote_rkey,
		       std::chrono::milliseconds timeout);
	int last_wc_status() const { return wc_status_; }

private:
	cq_ptr cq_;
	qp_ptr sender_;
	qp_ptr receiver_;
	int wc_status_ = IBV_WC_SUCCESS;
};

int64_t monotonic_raw_ns();

} // namespace pinmatrix
