// SPDX-License-Identifier: GPL-2.0
#include "capability.hpp"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace pinmatrix {

int set_effective_cap(int cap, bool on)
{
	if (cap < 0 || cap >= 64)
		return -EINVAL;
	__user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
	__user_cap_data_struct data[2]{};
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	const uint32_t bit = 1u << (cap % 32);
	if (on)
		data[cap / 32].effective |= bit;
	else
		data[cap / 32].effective &= ~bit;
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

} // namespace pinmatrix
