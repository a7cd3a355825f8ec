// SPDX-License-Identifier: GPL-2.0
#pragma once

// A short-term pin the stock kernel takes for I/O: an O_DIRECT write of
// user pages to a device-mapper target that is suspended. The write's bio
// holds its pages (iov_iter_get_pages(): a GUP reference, FOLL_GET, before
// 6.5; iov_iter_extract_pages(): FOLL_PIN from 6.5) while the target defers
// it, until the target resumes. The target is a linear map of a loop device
// over a memfd, made and removed through the loop and device-mapper ioctls
// (no out-of-tree module, no dmsetup), named pinmatrix-held-write-PID. A
// process killed while it holds one leaves both behind, and its writer task
// asleep uninterruptibly until someone resumes the target.
// A write, not a read: the page's content stays as it was.

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "unique_fd.hpp"

namespace pinmatrix {

class held_direct_write {
public:
	// 0 with the write held in the kernel (its task asleep in it), or
	// -errno, with what failed in why. Throws unmet_need where the kernel
	// lacks loop or device-mapper.
	static int take(void *addr, size_t length, std::shared_ptr<held_direct_write> &out, std::string &why);
	held_direct_write(const held_direct_write &) = delete;
	held_direct_write &operator=(const held_direct_write &) = delete;
	// Resumes the target, waits for the write, removes the target and the
	// loop device.
	~held_direct_write();

private:
	held_direct_write() = default;
	int make_target(std::string &why);
	int start_write(void *addr, size_t length, std::string &why);

	unique_fd memfd_, loop_, control_, target_;
	std::string name_;
	bool created_ = false, suspended_ = false;
	std::thread writer_;
	std::atomic<pid_t> writer_tid_{0};
};

} // namespace pinmatrix
