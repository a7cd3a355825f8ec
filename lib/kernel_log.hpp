// SPDX-License-Identifier: GPL-2.0
#pragma once

// What in a kernel log means the kernel found a bug. One table for every
// place that checks (the runner per case, the launcher per guest, the
// module, UALink and fuzz tests), so a debug kernel's reports (KASAN,
// lockdep, sleeping in atomic context) fail all of them alike.

#include <string>
#include <string_view>
#include <vector>

#include "unique_fd.hpp"

namespace pinmatrix {

struct kernel_alarm_pattern {
	const char *text;	// a substring of the report's headline
	const char *what;	// which checker prints it
};

const std::vector<kernel_alarm_pattern> &kernel_alarm_patterns();

// A task dump asked for on purpose (the runner's sysrq 'w' for a case that
// ran out of time) is logged between these two lines; its stack dumps
// ("Call Trace") are evidence, not bugs, as is an allocation failure's
// (warn_alloc()). Headlines in either still count.
inline constexpr const char *requested_dump_begins = "pinmatrix: requested task dump begins";
inline constexpr const char *requested_dump_ends = "pinmatrix: requested task dump ends";

// The lines of LOG holding one of the patterns, in order.
std::vector<std::string> kernel_alarms(std::string_view log);

// The whole kernel ring buffer (klogctl); throws sys_error (EPERM without
// CAP_SYSLOG under dmesg_restrict).
std::string read_kernel_log();

// Follows /dev/kmsg from the moment it is made: what the kernel logged
// since, record by record: unlike a before/after count over the ring
// buffer, a buffer that wraps in between shifts nothing.
class kernel_log_cursor {
public:
	kernel_log_cursor();	// throws sys_error
	// The text of each record logged since the last call (or construction).
	std::vector<std::string> new_records();
	// The alarm lines logged since the last call (or construction).
	std::vector<std::string> new_alarms();

private:
	unique_fd fd_;
};

} // namespace pinmatrix
