// SPDX-License-Identifier: GPL-2.0
#pragma once

// `pinmatrix explain`: the registration telemetry's diagnosis for a fleet
// engineer on a live node.
//
//   pinmatrix explain PID RANGE      where the pages of RANGE of process PID
//                                    live, its memlock state, and what an
//                                    ENOMEM from registering them would most
//                                    likely mean
//   pinmatrix explain -- CMD ARGS    runs CMD under a kernel trace of the
//                                    registration path (its processes only)
//                                    and explains each registration of it
//                                    that failed; exits with CMD's status
//                                    (a process is stopped for the few
//                                    milliseconds it takes to read its
//                                    memlock state and pages as it registers)
//
// With --format json (or its old spelling --json) the report is JSON on
// standard output (and the wrapped command's own standard output goes to
// standard error).
//
// RANGE: START-END (hex, as /proc/PID/maps prints), START+LENGTH (LENGTH in
// bytes, with K, M or G, or 0x hex) or START (one page).
//
// The test module only ever probes and pins its caller's own memory, so it
// cannot see another process's pages or pins: placement comes from
// /proc/PID/pagemap, /proc/kpageflags and /proc/zoneinfo (PFNs need root),
// and the report says what it could not see. Bad pid or range: exit 2.

#include <sys/types.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace pinmatrix {

struct explain_options {
	std::optional<pid_t> pid;
	std::string range;
	std::vector<std::string> command;	// the wrapper form
	bool json = false;
};

struct address_range {
	uint64_t start = 0, end = 0;	// end exclusive
};
// Throws usage_error for anything but the RANGE forms above.
address_range parse_address_range(const std::string &text);

// Returns the exit code (the command's, in the wrapper form); throws
// usage_error for a bad pid, range or command.
int explain(const explain_options &opt, std::ostream &out);

} // namespace pinmatrix
