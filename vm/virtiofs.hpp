// SPDX-License-Identifier: GPL-2.0
#pragma once

// The guest's two shares over virtiofs, for a kernel without 9p (Debian's
// cloud kernels): the host root, read-only, tag "hostroot", and the group's
// guest/ dir, read-write, tag "results" (vm/guest/init mounts them). One
// virtiofsd serves each, started by this object and ended by it, by PID.
//
// Read-only is the host's doing, not the guest's: the root's virtiofsd
// runs in a mount namespace of its own in which every mount is read-only
// (mount_setattr, AT_RECURSIVE), so a guest that mounts it read-write
// still writes nothing. Bookworm's virtiofsd has no read-only option.
//
// Each virtiofsd is handed a listening socket (--fd) in a private
// directory under /tmp (a unix socket path is at most 107 bytes; --out may
// be longer); QEMU connects to it. Logs: OUT/virtiofsd-hostroot.log and
// OUT/virtiofsd-results.log.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace pinmatrix {

// Why this host cannot serve virtiofs shares (no virtiofsd: Debian 12's is
// qemu-system-common's), or "".
std::string virtiofs_unmet();

class virtiofs_shares {
public:
	// Throws unmet_need when there is no virtiofsd or the host root cannot
	// be made read-only for it; sys_error for what else fails.
	virtiofs_shares(const std::filesystem::path &results_dir, const std::filesystem::path &log_dir);
	~virtiofs_shares();
	virtiofs_shares(const virtiofs_shares &) = delete;
	virtiofs_shares &operator=(const virtiofs_shares &) = delete;

	// QEMU's options for both shares and the guest memory they need
	// (vhost-user maps it: a shared memfd of memory_mib).
	std::vector<std::string> qemu_args(unsigned memory_mib) const;

private:
	void start(const std::string &tag, const std::filesystem::path &source, bool read_only,
		   const std::filesystem::path &log);

	std::filesystem::path dir_;
	std::vector<pid_t> pids_;
};

} // namespace pinmatrix
