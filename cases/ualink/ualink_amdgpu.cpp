// SPDX-License-Identifier: GPL-2.0
// amdgpu's own buffer creation, for the cases run on a real node. Kept apart:
// it is the only file that needs libdrm's amdgpu_drm.h.

#include <amdgpu_drm.h>
#include <xf86drm.h>

#include <cerrno>

#include "ualink_device.hpp"

namespace pinmatrix::ualink {

int amdgpu_try_create_bo(int fd, uint64_t size, uint32_t domains, uint32_t &handle)
{
	union drm_amdgpu_gem_create arg = {};
	arg.in.bo_size = size;
	arg.in.alignment = 4096;
	arg.in.domains = domains;
	// The cases write and read through a CPU mapping of the exporter's BO.
	arg.in.domain_flags = AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED;
	// drmCommandWriteRead() returns -errno itself.
	if (int rc = drmCommandWriteRead(fd, DRM_AMDGPU_GEM_CREATE, &arg, sizeof(arg)))
		return rc < 0 ? rc : -EINVAL;
	handle = arg.out.handle;
	return 0;
}

} // namespace pinmatrix::ualink
