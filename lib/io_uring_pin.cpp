// SPDX-License-Identifier: GPL-2.0
#include "io_uring_pin.hpp"

#include <liburing.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>

#include "clock.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

struct io_uring_buffer::ring {
	io_uring r{};
	bool ready = false, registered = false;
	~ring()
	{
		if (registered)
			io_uring_unregister_buffers(&r);
		if (ready)
			io_uring_queue_exit(&r);
	}
};

io_uring_buffer::io_uring_buffer() = default;

io_uring_buffer::io_uring_buffer(io_uring_buffer &&o) noexcept
	: ring_(std::move(o.ring_)), addr_(o.addr_), length_(o.length_)
{
}

io_uring_buffer &io_uring_buffer::operator=(io_uring_buffer &&o) noexcept
{
	if (this != &o) {
		release();
		ring_ = std::move(o.ring_);
		addr_ = o.addr_;
		length_ = o.length_;
	}
	return *this;
}

io_uring_buffer::~io_uring_buffer() { release(); }

int io_uring_buffer::try_register(void *addr, size_t length, io_uring_buffer &out, int64_t *latency_ns)
{
	auto r = std::make_unique<ring>();
	if (int ret = io_uring_queue_init(4, &r->r, 0))
		return ret;
	r->ready = true;
	iovec iov{addr, length};
	const int64_t t0 = monotonic_raw_ns();
	int ret = io_uring_register_buffers(&r->r, &iov, 1);
	if (latency_ns)
		*latency_ns = monotonic_raw_ns() - t0;
	if (ret)
		return ret; // ~ring closes it
	r->registered = true;
	io_uring_buffer b;
	b.ring_ = std::move(r);
	b.addr_ = addr;
	b.length_ = length;
	out = std::move(b);
	return 0;
}

int io_uring_buffer::release()
{
	int ret = 0;
	if (ring_ && ring_->registered) {
		ret = io_uring_unregister_buffers(&ring_->r);
		ring_->registered = false;
	}
	ring_.reset();
	return ret;
}

int io_uring_buffer::read_fixed(const void *data, size_t length, std::chrono::milliseconds timeout)
{
	if (!ring_ || length > length_)
		return -EINVAL;
	unique_fd fd(memfd_create("pinmatrix-io_uring", MFD_CLOEXEC));
	if (!fd)
		return -errno;
	if (pwrite(fd.get(), data, length, 0) != ssize_t(length))
		return -EIO;
	io_uring_sqe *sqe = io_uring_get_sqe(&ring_->r);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_read_fixed(sqe, fd.get(), addr_, unsigned(length), 0, 0);
	int ret = io_uring_submit(&ring_->r);
	if (ret < 0)
		return ret;
	__kernel_timespec ts{timeout.count() / 1000, (timeout.count() % 1000) * 1'000'000};
	io_uring_cqe *cqe = nullptr;
	ret = io_uring_wait_cqe_timeout(&ring_->r, &cqe, &ts);
	if (ret)
		return ret;
	const int res = cqe->res;
	io_uring_cqe_seen(&ring_->r, cqe);
	if (res < 0)
		return res;
	return size_t(res) == length ? 0 : -EIO;
}

std::optional<std::string> io_uring_unavailable()
{
	io_uring r;
	if (int ret = io_uring_queue_init(1, &r, 0))
		return std::string("io_uring_setup: ") + strerror(-ret) +
		       (ret == -EPERM ? " (kernel.io_uring_disabled?)" : ret == -ENOSYS ? " (CONFIG_IO_URING off)" : "");
	io_uring_queue_exit(&r);
	return std::nullopt;
}

} // namespace pinmatrix
