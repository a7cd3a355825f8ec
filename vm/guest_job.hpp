// SPDX-License-Identifier: GPL-2.0
#pragma once

// The guest's job: what vm/guest/job.sh runs in the guest, as the shell
// assignments it sources from the results share (guest/job.env): the
// matrix (`pinmatrix run`, then the benchmarks with --bench), a command
// (--guest-cmd), or a managed node's sshd (--ssh-port), and what the guest
// prepares first (the plan's guest_needs).

#include <filesystem>
#include <string>

#include "group_spec.hpp"

namespace pinmatrix {

// job.env's text; modules: the dir of the test modules built for the kernel.
std::string guest_job_env(const group_spec &g, const guest_needs &needs, const std::filesystem::path &modules);

// Writes guest_dir/job.env (making guest_dir).
void write_guest_job(const std::filesystem::path &guest_dir, const group_spec &g, const guest_needs &needs,
		     const std::filesystem::path &modules);

} // namespace pinmatrix
