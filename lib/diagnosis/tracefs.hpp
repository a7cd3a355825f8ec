// SPDX-License-Identifier: GPL-2.0
#pragma once

// Kernel traces of the registration path through tracefs alone (no extra
// module), by libtracefs (the library trace-cmd uses): kprobe and kretprobe events on ib_umem_get, the long-term GUP
// of this kernel (6.1 and 6.12 names) and migrate_pages, and the
// migrate: tracepoints, in a tracefs instance of our own
// (instances/pinmatrix-<pid>) so that other users of ftrace are not
// disturbed. The probes are kernel-global, so they carry a group of our
// own (pinmatrix_<pid>) and are enabled only in our instance.
//
// Set up once per run, following the run's process and its children
// (set_event_pid, event-fork); each case process takes its own events from
// the buffer and brackets its registrations with trace_marker lines.
// Everything is removed when the session ends: by the destructor, by a
// SIGINT/SIGTERM/SIGHUP of the process that set it up, and what a killed
// run left behind is removed by the next one (its pid is gone). A probe
// this kernel cannot place is a note, not a failure; no tracefs at all
// leaves a session that is not available(), with the reason. The removal
// on a fatal signal writes the files itself: libtracefs allocates, and a
// signal handler may not.

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct tracefs_instance;	// libtracefs
struct tracefs_dynevent;

namespace pinmatrix {

struct probe_status {
	std::string role;	// event name in our group (lib/diagnosis/kernel_trace.hpp)
	std::string symbol;	// what it probes; empty when nothing could be placed
	bool placed = false;
	std::string note;	// why not, or what it stands for
};

struct probe_spec;	// one kprobe the session places (tracefs.cpp)
struct tracefs_instance_deleter {
	void operator()(struct tracefs_instance *instance) const;
};
struct tracefs_dynevent_deleter {
	void operator()(struct tracefs_dynevent *event) const;
};

class trace_session {
public:
	// Never throws for a kernel that cannot trace: see available().
	static std::unique_ptr<trace_session> start();
	~trace_session();
	trace_session(const trace_session &) = delete;
	trace_session &operator=(const trace_session &) = delete;

	bool available() const { return available_; }
	// Everything a reader needs to know about what was and was not traced.
	nlohmann::json describe() const;
	// Roles that could not be placed here (their absence says nothing).
	std::vector<std::string> missing_roles() const;
	// For decoding migration entry PTEs (kernel_trace.hpp); 0: do not.
	int swp_pfn_bits() const { return swp_pfn_bits_; }
	const std::string &kernel_release() const { return release_; }

	// Records the events of `pid` and of every process it forks from now
	// on (set_event_pid, event-fork), only those; turns tracing on.
	void follow(pid_t pid);
	// What the buffer holds, consumed (trace_pipe): each caller filters
	// by its pid. Cheap; nothing to reset between cases.
	std::string take() const;
	// The instance's trace_pipe (for reading as events arrive), or -1.
	int open_pipe() const;
	// A trace_marker line in our instance; best effort.
	void mark(const std::string &text) const;

	// Removes the instance and every probe; idempotent.
	void stop();

private:
	trace_session() = default;
	void setup();
	void remove_dead_instances();
	void remove_dead_probes();
	void create_instance();
	void arm_emergency_cleanup() const;
	probe_status place_probe(const probe_spec &spec);
	void enable_events();
	int open_instance_pipe() const;
	void remove_probes();

	bool available_ = false;
	bool stopped_ = false;
	pid_t owner_ = 0;
	std::string tracefs_, instance_, group_, release_;
	std::unique_ptr<struct tracefs_instance, tracefs_instance_deleter> inst_;
	int swp_pfn_bits_ = 0;
	std::vector<probe_status> probes_;
	std::vector<std::unique_ptr<struct tracefs_dynevent, tracefs_dynevent_deleter>> placed_;  // to remove
	std::vector<std::string> tracepoints_;		// "migrate/mm_migrate_pages" enabled
	std::vector<std::string> notes_;
	std::vector<std::string> cleaned_;		// leftovers of dead runs removed
};

// The tracefs mount ("/sys/kernel/tracing", or under debugfs), if any.
std::optional<std::string> find_tracefs();

} // namespace pinmatrix
