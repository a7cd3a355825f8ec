// SPDX-License-Identifier: GPL-2.0
#pragma once

// A lock on one entry of the cache (a kernel; the test modules and the
// initramfs of one kernel), so that runs preparing different entries go on
// side by side and a kernel build (10-20 minutes) holds up only the runs
// that need that kernel. A run that must wait says so after a second, and every
// minute: for what, and who holds it (PID, command line, since when).
//
// CACHE/locks/NAME.lock, flock(2)ed; its holder writes one line into it:
//   PID <tab> SINCE (epoch seconds) <tab> WHAT <tab> COMMAND LINE
// The lock goes with the process (the fd closes): a killed holder frees it.

#include <filesystem>
#include <iosfwd>
#include <string>

#include "unique_fd.hpp"

namespace pinmatrix {

class cache_entry_lock {
public:
	// name: a file name ([A-Za-z0-9._+-], no "/"); what: for people,
	// e.g. "kernel 'build@6.12'". Waits, saying so on `say`.
	cache_entry_lock(const std::filesystem::path &cache, const std::string &name, const std::string &what,
			 std::ostream &say);

private:
	unique_fd fd_;
};

// Who holds a lock file, as a person reads it ("PID 4242 (pinmatrix vm
// --kernel build), for 3m10s"), from the line its holder wrote.
std::string lock_holder_text(const std::string &line, long now);

} // namespace pinmatrix
