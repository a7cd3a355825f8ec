// SPDX-License-Identifier: GPL-2.0
#include "kernel_log.hpp"

#include <fcntl.h>
#include <sys/klog.h>

#include <cerrno>

#include "sys_error.hpp"

namespace pinmatrix {

const std::vector<kernel_alarm_pattern> &kernel_alarm_patterns()
{
	// Headlines, not whole reports: one line per report is enough to fail,
	// and the line names the checker.
	static const std::vector<kernel_alarm_pattern> table = {
		{"Kernel panic", "panic()"},
		{"Oops", "an oops"},
		{"general protection fault", "a #GP (with KASAN: \"KASAN: null-ptr-deref in range\")"},
		{"kernel BUG at", "BUG_ON(), VM_BUG_ON_PAGE() (DEBUG_VM)"},
		// Also "BUG: KASAN: ...", "BUG: sleeping function called from
		// invalid context" (DEBUG_ATOMIC_SLEEP), "BUG: scheduling while
		// atomic", "BUG: Bad page state", "BUG: MAX_LOCKDEP_...".
		{"BUG:", "the kernel's bug reports"},
		{"KASAN:", "KASAN"},
		{"UBSAN:", "UBSAN"},
		// Also lockdep's headlines ("WARNING: possible circular locking
		// dependency detected", "WARNING: suspicious RCU usage").
		{"WARNING:", "WARN_ON(), VM_WARN_ON() and lockdep"},
		{"possible circular locking", "lockdep: lock order inversion"},
		{"inconsistent lock state", "lockdep: irq-safety"},
		{"possible recursive locking", "lockdep: recursion"},
		{"suspicious RCU usage", "lockdep: RCU"},
		{"list_add corruption", "DEBUG_LIST"},
		{"list_del corruption", "DEBUG_LIST"},
		{"refcount_t:", "refcount over- or underflow"},
		// Any stack dump, including those with no headline above
		// (dump_stack()); not an allocation failure's (below).
		{"Call Trace", "a stack dump"},
	};
	return table;
}

namespace {

// Stack dumps that are evidence, not bugs: those of a requested task dump
// (between its markers), and that of an allocation failure's report
// (warn_alloc(): "<comm>: page allocation failure: order:N, mode:..." and
// the one trace that follows it), which is the kernel saying memory ran short
// (a long-term pin's migration target under memory pressure), not a bug:
// the case's own checks judge what it did then. Headlines in either still
// count.
class evidence_dumps {
public:
	void see(std::string_view line)
	{
		if (line.find(requested_dump_begins) != std::string_view::npos)
			requested_ = true;
		else if (line.find(requested_dump_ends) != std::string_view::npos)
			requested_ = false;
		if (line.find("page allocation failure: order:") != std::string_view::npos)
			allocation_failure_ = true;
	}
	// Whether a stack dump seen now is evidence; an allocation failure's
	// report has one.
	bool trace_is_evidence()
	{
		const bool evidence = requested_ || allocation_failure_;
		allocation_failure_ = false;
		return evidence;
	}

private:
	bool requested_ = false;
	bool allocation_failure_ = false;
};

} // namespace

std::vector<std::string> kernel_alarms(std::string_view log)
{
	std::vector<std::string> found;
	evidence_dumps evidence;
	while (!log.empty()) {
		const size_t eol = log.find('\n');
		const std::string_view line = log.substr(0, eol);
		evidence.see(line);
		for (const auto &p : kernel_alarm_patterns())
			if (line.find(p.text) != std::string_view::npos) {
				if (std::string_view(p.text) != "Call Trace" || !evidence.trace_is_evidence())
					found.emplace_back(line);
				break;
			}
		if (eol == std::string_view::npos)
			break;
		log.remove_prefix(eol + 1);
	}
	return found;
}

std::string read_kernel_log()
{
	const int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
	if (size < 0)
		throw last_sys_error("klogctl(SIZE_BUFFER)");
	std::string log(size_t(size), '\0');
	const int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log.data(), size);
	if (n < 0)
		throw last_sys_error("klogctl(READ_ALL)");
	log.resize(size_t(n));
	return log;
}

kernel_log_cursor::kernel_log_cursor() : fd_(::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC))
{
	if (!fd_)
		throw last_sys_error("open /dev/kmsg");
	if (lseek(fd_.get(), 0, SEEK_END) < 0)
		throw last_sys_error("seek /dev/kmsg");
}

std::vector<std::string> kernel_log_cursor::new_records()
{
	// One record per read: "prio,seq,usec,flags;text\n" then " KEY=value"
	// lines; the text is kept.
	std::vector<std::string> records;
	char rec[8192];
	for (;;) {
		const ssize_t n = read(fd_.get(), rec, sizeof(rec));
		if (n < 0 && (errno == EINTR || errno == EPIPE))
			continue; // EPIPE: records overwritten before we read them
		if (n <= 0)
			break;
		std::string_view r(rec, size_t(n));
		const size_t semi = r.find(';');
		if (semi == std::string_view::npos)
			continue;
		r.remove_prefix(semi + 1);
		records.emplace_back(r.substr(0, r.find('\n')));
	}
	return records;
}

std::vector<std::string> kernel_log_cursor::new_alarms()
{
	// Scanned together: a requested dump spans records.
	std::string text;
	for (const auto &r : new_records())
		text.append(r).push_back('\n');
	return kernel_alarms(text);
}

} // namespace pinmatrix
