// SPDX-License-Identifier: GPL-2.0
#pragma once

// QEMU's command line for a group's guest, and the guest kernel's command
// line within it: the machine (q35, TCG or KVM, qboot), the kernel and initramfs
// prepared for it, the host root and the results shared over 9p, the
// devices the plan needs (guest_needs), a managed node's forwarded port.

#include <filesystem>
#include <string>
#include <vector>

#include "group_spec.hpp"
#include "kernels.hpp"
#include "qmp.hpp"
#include "step_clock.hpp"
#include "virtiofs.hpp"

namespace pinmatrix {

// A group's kernel, the test modules built for it and its initramfs.
struct prepared_guest {
	guest_kernel kernel;
	std::filesystem::path modules, initrd;
	step_times prepare_ms;	// kernel, test modules, initramfs: fetched, built or found in the cache
};

// The boot placement's kernel parameters, then --append (and the matrix
// file's).
std::string boot_append(const group_spec &g);

// The guest kernel's command line: stage2 and the kernel's dir (what the
// guest's init reads), the boot's parameters, those every boot takes.
std::string guest_cmdline(const std::filesystem::path &kernel_dir, share_transport share, const group_spec &g,
			  const guest_needs &needs);

// Throws usage_error for a path the guest's command line or QEMU's options
// cannot carry (a space, a quote, a comma), before anything is written.
void check_guest_paths(const group_spec &g);

// Throws usage_error where the guest's command line would be longer than
// x86 takes (a long --append), before the kernel is known.
void check_cmdline_length(const group_spec &g, const guest_needs &needs);

// accel: "kvm" or "tcg" (vm/accel.hpp chooses). virtiofs: the shares'
// daemons where the kernel has no 9p (p.kernel.share), else null.
std::vector<std::string> qemu_argv(const group_spec &g, const prepared_guest &p, const guest_needs &needs,
				   const std::string &cmdline, const qmp_socket &qmp, const std::string &accel,
				   const virtiofs_shares *virtiofs = nullptr);

} // namespace pinmatrix
