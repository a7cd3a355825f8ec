// SPDX-License-Identifier: GPL-2.0
#pragma once

// A long-term pin through vhost-vdpa (drivers/vhost/vdpa.c): a
// VHOST_IOTLB_UPDATE message written to /dev/vhost-vdpa-N maps user memory
// for the vDPA device. A device that maps by physical address (the vDPA
// simulator, vdpa_sim, with use_va=0 where it has that parameter) is mapped
// through vhost_vdpa_pa_map(): pin_user_pages(FOLL_LONGTERM), held until
// the range is invalidated or the file is closed.

#include <cstddef>
#include <cstdint>
#include <string>

#include "unique_fd.hpp"

namespace pinmatrix {

class vhost_vdpa_pin {
public:
	// The first /dev/vhost-vdpa-*, owned (VHOST_SET_OWNER) with IOTLB
	// messages v2. Throws unmet_need with what is missing: no device (and
	// why: module not built, not loaded, no vDPA device added), a device
	// that maps by virtual address (which pins nothing).
	static vhost_vdpa_pin open();

	const std::string &device() const { return device_; }
	// VHOST_IOTLB_UPDATE of [addr, addr + length) at iova, read-write:
	// errno, 0 when mapped (and pinned). latency_ns: the write alone.
	int map(void *addr, size_t length, uint64_t iova, int64_t *latency_ns);
	// VHOST_IOTLB_INVALIDATE of what map() mapped: the pages are unpinned.
	void unmap();

private:
	unique_fd fd_;
	std::string device_;
	uint64_t iova_ = 0;
	size_t length_ = 0;
};

} // namespace pinmatrix
