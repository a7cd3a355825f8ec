// SPDX-License-Identifier: GPL-2.0
#pragma once

// io_uring fixed buffers: IORING_REGISTER_BUFFERS pins the buffer with
// pin_user_pages(FOLL_WRITE | FOLL_LONGTERM) (io_pin_pages(), io_uring/rsrc.c
// in 6.1), so it is a kernel long-term pinner that needs no device and no
// module: a first pin (it migrates a ZONE_MOVABLE/CMA page at its pin) and a
// second pin (it fails with ENOMEM when a held short-term pin blocks that
// migration), for nodes without an RNIC.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace pinmatrix {

class io_uring_buffer {
public:
	io_uring_buffer();
	io_uring_buffer(io_uring_buffer &&o) noexcept;
	io_uring_buffer &operator=(io_uring_buffer &&o) noexcept;
	io_uring_buffer(const io_uring_buffer &) = delete;
	io_uring_buffer &operator=(const io_uring_buffer &) = delete;
	~io_uring_buffer();

	// Sets up a ring and registers [addr, addr + length) as its fixed
	// buffer 0: 0 or -errno (-ENOMEM when the page could not be migrated).
	// latency_ns: io_uring_register() alone, CLOCK_MONOTONIC_RAW.
	static int try_register(void *addr, size_t length, io_uring_buffer &out,
				int64_t *latency_ns = nullptr);
	// Unregisters (unpins) and closes the ring: 0 or -errno.
	int release();
	explicit operator bool() const { return ring_ != nullptr; }

	// The kernel writes through its pin: IORING_OP_READ_FIXED of `length`
	// bytes of data (from a memfd) into the registered buffer. 0 or -errno.
	int read_fixed(const void *data, size_t length, std::chrono::milliseconds timeout);

private:
	struct ring;
	std::unique_ptr<ring> ring_;
	void *addr_ = nullptr;
	size_t length_ = 0;
};

// Whether this kernel lets us set up a ring: nullopt, else why not.
std::optional<std::string> io_uring_unavailable();

} // namespace pinmatrix
