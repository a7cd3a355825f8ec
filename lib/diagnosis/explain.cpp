// SPDX-License-Identifier: GPL-2.0
#include "explain.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "byte_size.hpp"
#include "kernel_trace.hpp"
#include "mapping.hpp"
#include "pin_module.hpp"
#include "proc_pages.hpp"
#include "registration_telemetry.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "tracefs.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

constexpr size_t max_pages_examined = size_t(1) << 18;	// 1 GiB of 4 KiB pages
constexpr size_t pages_listed = 16;

std::optional<uint64_t> parse_hex(std::string s)
{
	if (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0)
		s = s.substr(2);
	if (s.empty() || s.size() > 16 || s.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
		return std::nullopt;
	return std::stoull(s, nullptr, 16);
}

// RANGE's LENGTH; a length beyond 64 bits is refused, never wrapped.
std::optional<uint64_t> parse_length(std::string s, const std::string &range)
{
	if (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0)
		return parse_hex(s);
	uint64_t mult = 1;
	if (!s.empty()) {
		switch (s.back()) {
		case 'k': case 'K': mult = 1ULL << 10; break;
		case 'm': case 'M': mult = 1ULL << 20; break;
		case 'g': case 'G': mult = 1ULL << 30; break;
		default: break;
		}
		if (mult != 1)
			s.pop_back();
	}
	if (s.empty() || s.size() > 15 || s.find_first_not_of("0123456789") != std::string::npos)
		return std::nullopt;
	uint64_t bytes = 0;
	if (__builtin_mul_overflow(std::stoull(s), mult, &bytes))
		throw usage_error("range '" + range + "': its length wraps around 64 bits");
	return bytes;
}

// Everything one registration's report says.
struct diagnosis {
	std::string title;
	int err = 0;			// what it failed with; 0 in the pid form (hypothetical ENOMEM)
	bool hypothetical = false;
	uint64_t address = 0, length = 0;
	std::string allocation_class, mapping;
	std::optional<process_memlock> memlock;
	std::string memlock_note;
	std::vector<proc_page> pages;
	size_t pages_total = 0;
	std::string pages_note;
	std::optional<trace_path> trace;
	registration_facts facts;
	classification cls;
	std::string stage;
	std::vector<std::string> notes;
};

std::string memlock_text(const process_memlock &m)
{
	auto limit = [](const std::optional<uint64_t> &v) { return v ? byte_size_text(*v) : std::string("unlimited"); };
	return "RLIMIT_MEMLOCK " + limit(m.soft) + " (hard " + limit(m.hard) + "), VmPin " +
	       std::to_string(m.vm_pin_kb) + " kB, VmLck " + std::to_string(m.vm_lck_kb) + " kB, CAP_IPC_LOCK " +
	       (m.cap_ipc_lock ? "yes" : "no");
}

std::string page_line(const proc_page &p)
{
	std::string s = hex(p.address) + "  ";
	if (!p.present)
		return s + (p.swapped ? "swapped out" : "not present (a registration faults it in)");
	if (!p.pfn)
		return s + "present, PFN hidden (needs CAP_SYS_ADMIN)";
	s += "pfn " + hex(*p.pfn) + "  zone " + (p.zone.empty() ? "?" : p.zone);
	if (!p.cma_area.empty())
		s += "  CMA area " + p.cma_area + " (pageblock MIGRATE_CMA)";
	if (p.longterm_pinnable)
		s += *p.longterm_pinnable ? "  long-term pinnable" : "  NOT long-term pinnable";
	if (p.kpageflags)
		s += "  " + kpageflags_text(*p.kpageflags);
	if (p.mapcount)
		s += "  mapcount " + std::to_string(*p.mapcount);
	return s;
}

// The facts for the classification, from what /proc and the trace show.
registration_facts facts_of(const diagnosis &d, const memory_state &mem)
{
	registration_facts f;
	f.err = d.hypothetical ? ENOMEM : d.err;
	f.foll_longterm = true;
	f.page_size = page_size();
	f.length = d.length;
	if (d.memlock && d.memlock->known) {
		f.memlock_known = true;
		f.memlock_limit = d.memlock->soft;
		f.cap_ipc_lock = d.memlock->cap_ipc_lock;
		f.vm_pin_bytes = d.memlock->vm_pin_kb * 1024;
	}
	f.pages = d.pages_total;
	std::set<std::string> where;
	for (const auto &p : d.pages) {
		if (!p.longterm_pinnable)
			continue;
		f.pages_placement_known++;
		if (!*p.longterm_pinnable) {
			f.pages_not_longterm_pinnable++;
			where.insert(p.cma_area.empty() ? "zone " + p.zone : "pageblock MIGRATE_CMA");
		}
	}
	f.not_pinnable_where = join(where, ", ");
	f.pins_visible = false;	// nobody exports another process's pins
	f.mem_available = mem.mem_available;
	f.min_free = mem.min_free;
	if (d.trace && d.trace->from_trace) {
		f.traced = true;
		f.gup_reached = d.trace->gup_reached;
		f.migration_attempted = d.trace->migration_attempted;
		f.migrate_failed = d.trace->migrate_failed;
		f.migrate_succeeded = d.trace->migrate_succeeded;
		f.gup_errno = d.trace->gup_errno;
		f.umem_errno = d.trace->umem_errno;
	}
	return f;
}

void classify(diagnosis &d)
{
	d.facts = facts_of(d, read_memory_state());
	d.cls = classify_failure(d.facts);
	if (!d.hypothetical)
		d.stage = failure_stage(d.facts, d.trace ? &*d.trace : nullptr);
}

std::string module_note()
{
	return std::string(::access(default_device_path, F_OK) == 0
				   ? "/dev/pinmatrix is loaded, but the test module only probes and pins within its "
				     "caller's own memory"
				   : "the test module is not loaded (it would only see its caller's own memory anyway)") +
	       ": placement from /proc/PID/pagemap, /proc/kpageflags, /proc/zoneinfo and the debugfs CMA "
	       "areas; pins are not visible (Linux exports no per-page pin count), so a blocking pin is "
	       "inferred, not seen";
}

void print(std::ostream &out, const diagnosis &d)
{
	out << d.title << "\n";
	auto row = [&](const char *label, const std::string &value) {
		if (!value.empty())
			out << "  " << label << std::string(18 - std::min<size_t>(17, strlen(label)), ' ') << value << "\n";
	};
	row("range", hex(d.address) + "-" + hex(d.address + d.length) + " (" + byte_size_text(d.length) + ")");
	row("allocation class", d.allocation_class);
	row("mapping", d.mapping);
	if (d.memlock && d.memlock->known)
		row("memlock", memlock_text(*d.memlock) + d.memlock_note);
	else
		row("memlock", "unknown" + d.memlock_note);
	if (!d.hypothetical) {
		row("errno", errno_name(d.err));
		row("failure stage", d.stage);
	}
	size_t present = 0, movable = 0, cma = 0, hidden = 0;
	for (const auto &p : d.pages) {
		present += p.present;
		hidden += p.present && !p.pfn;
		movable += p.zone == "Movable";
		cma += !p.cma_area.empty();
	}
	if (!d.pages.empty() || !d.pages_note.empty()) {
		std::string summary = std::to_string(d.pages_total) + (d.pages_total == 1 ? " page, " : " pages, ") +
				      std::to_string(present) + " present";
		if (present > hidden)
			summary += ": " + std::to_string(movable) + " in ZONE_MOVABLE, " + std::to_string(cma) + " in CMA" +
				   (movable + cma ? " (a long-term pin must migrate those)" : "");
		if (hidden)
			summary += "; PFNs hidden for " + std::to_string(hidden) + " (needs CAP_SYS_ADMIN)";
		row("pages", summary + d.pages_note);
		// Present pages one by one; runs of absent ones as one line.
		size_t listed = 0, i = 0;
		for (; i < d.pages.size() && listed < pages_listed; listed++) {
			if (d.pages[i].present) {
				out << "    " << page_line(d.pages[i++]) << "\n";
				continue;
			}
			size_t j = i;
			while (j < d.pages.size() && !d.pages[j].present && d.pages[j].swapped == d.pages[i].swapped)
				j++;
			if (j - i == 1)
				out << "    " << page_line(d.pages[i]) << "\n";
			else
				out << "    " << hex(d.pages[i].address) << "-" << hex(d.pages[j - 1].address + page_size()) << "  "
				    << j - i << " pages " << (d.pages[i].swapped ? "swapped out" : "not present (a registration faults them in)")
				    << "\n";
			i = j;
		}
		if (i < d.pages.size())
			out << "    ... " << d.pages.size() - i << " more pages\n";
	}
	if (d.trace) {
		out << "  kernel path" << (d.trace->from_trace ? "" : " (not traced)") << "\n";
		std::istringstream lines(d.trace->text());
		for (std::string l; std::getline(lines, l);)
			out << "    " << l << "\n";
	}
	out << "  " << (d.hypothetical ? "an ENOMEM from ibv_reg_mr on this range would most likely mean"
				       : "what it most likely means")
	    << ": " << d.cls.label << " (rule " << d.cls.rule << ")\n";
	for (const auto &f : d.cls.facts)
		out << "    - " << f << "\n";
	for (const auto &r : d.cls.ruled_out)
		out << "    ruled out " << r << "\n";
	for (const auto &n : d.notes)
		out << "  note: " << n << "\n";
}

json to_json(const diagnosis &d)
{
	json pages = json::array();
	for (const auto &p : d.pages) {
		json j = {{"address", p.address}, {"present", p.present}, {"swapped", p.swapped}};
		if (p.pfn)
			j["pfn"] = *p.pfn;
		if (!p.zone.empty())
			j["zone"] = p.zone;
		if (!p.cma_area.empty())
			j["cma_area"] = p.cma_area;
		if (p.longterm_pinnable)
			j["longterm_pinnable"] = *p.longterm_pinnable;
		if (p.kpageflags)
			j["kpageflags"] = kpageflags_text(*p.kpageflags);
		if (p.mapcount)
			j["mapcount"] = *p.mapcount;
		pages.push_back(j);
	}
	json j = {{"title", d.title},
		  {"address", d.address},
		  {"length", d.length},
		  {"allocation_class", d.allocation_class},
		  {"mapping", d.mapping},
		  {"pages", pages},
		  {"pages_total", d.pages_total},
		  {"classification", to_json(d.cls)},
		  {"hypothetical_enomem", d.hypothetical},
		  {"notes", d.notes}};
	if (!d.hypothetical) {
		j["errno"] = d.err;
		j["errno_name"] = errno_name(d.err);
		j["failure_stage"] = d.stage;
	}
	if (d.memlock && d.memlock->known)
		j["memlock"] = {{"limit_bytes", d.memlock->soft ? json(*d.memlock->soft) : json("unlimited")},
				{"hard_limit_bytes", d.memlock->hard ? json(*d.memlock->hard) : json("unlimited")},
				{"cap_ipc_lock", d.memlock->cap_ipc_lock},
				{"vm_pin_kb", d.memlock->vm_pin_kb},
				{"vm_lck_kb", d.memlock->vm_lck_kb}};
	if (d.trace)
		j["trace"] = to_json(*d.trace);
	return j;
}

// Mapping and pages of [addr, addr + length) of pid; best effort for a
// process that may be gone (the wrapper form).
void read_placement(diagnosis &d, pid_t pid)
{
	const uint64_t ps = page_size();
	const uint64_t first = d.address / ps * ps;
	const uint64_t end = (d.address + d.length + ps - 1) / ps * ps;
	d.pages_total = (end - first) / ps;
	const auto maps = read_maps(pid);
	const auto vmas = mappings_of(maps, first, end - first);
	if (!vmas.empty()) {
		d.allocation_class = allocation_class(vmas.front());
		d.mapping = join(vmas, "; ", [](const auto &m) {
			return hex(m.start) + "-" + hex(m.end) + " " + m.perms +
			       (m.path.empty() ? " (anonymous)" : " " + m.path);
		});
	}
	const size_t n = std::min<size_t>(d.pages_total, max_pages_examined);
	d.pages = read_proc_pages(pid, first, n);
	if (n < d.pages_total)
		d.pages_note = "; examined the first " + std::to_string(n) + " pages";
}

pid_t checked_pid(pid_t pid)
{
	if (pid <= 0)
		throw usage_error("pid " + std::to_string(pid) + ": not a process id");
	if (kill(pid, 0) && errno == ESRCH)
		throw usage_error("pid " + std::to_string(pid) + ": no such process");
	if (::access(("/proc/" + std::to_string(pid) + "/pagemap").c_str(), R_OK))
		throw usage_error("pid " + std::to_string(pid) + ": cannot read /proc/" + std::to_string(pid) +
				  "/pagemap (" + strerror(errno) + "): run as root or as its owner");
	return pid;
}

int explain_pid(const explain_options &opt, std::ostream &out)
{
	const pid_t pid = checked_pid(*opt.pid);
	const address_range r = parse_address_range(opt.range);
	std::vector<vma> maps;
	try {
		maps = read_maps(pid);
	} catch (const std::system_error &e) {
		throw usage_error("pid " + std::to_string(pid) + ": " + e.what());
	}
	// The whole range must be mapped: ibv_reg_mr of a hole fails with EFAULT.
	uint64_t covered = r.start;
	for (const auto &m : mappings_of(maps, r.start, r.end - r.start))
		if (m.start <= covered && m.end > covered)
			covered = m.end;
	if (covered < r.end) {
		std::string near;
		for (const auto &m : maps)
			if (m.end > r.start && near.size() < 200)
				near += "; " + hex(m.start) + "-" + hex(m.end) + " " + m.perms + (m.path.empty() ? "" : " " + m.path);
		throw usage_error("range " + hex(r.start) + "-" + hex(r.end) + " is not mapped in pid " + std::to_string(pid) +
				  " from " + hex(covered) + " (see /proc/" + std::to_string(pid) + "/maps" + near + ")");
	}

	diagnosis d;
	d.hypothetical = true;
	d.address = r.start;
	d.length = r.end - r.start;
	d.memlock = read_process_memlock(pid);
	d.title = "pinmatrix explain: pid " + std::to_string(pid) + " (" + d.memlock->name + ")";
	read_placement(d, pid);
	d.notes.push_back(module_note());
	if (geteuid() != 0)
		d.notes.push_back("not root: PFNs, page flags and zones are hidden");
	classify(d);
	if (opt.json)
		out << to_json(d).dump(2) << "\n";
	else
		print(out, d);
	return 0;
}

// One registration of a wrapped command, cut from the trace: its events
// from ib_umem_get on, and what was read of its process meanwhile.
struct seen_registration {
	int pid = 0;
	std::string task;
	std::vector<trace_event> events;
	std::optional<process_memlock> memlock;
	std::vector<proc_page> pages;
	std::string allocation_class, mapping;
	std::string when;		// when its process was read
	std::string placement_error;	// why its pages could not be read
	trace_event entry;		// its ib_umem_get
};

// Whether execvp() finds something to run for name (a path, or a name
// looked up in PATH): "" when it does, else why not.
static std::string why_not_runnable(const std::string &name)
{
	auto runnable = [](const std::string &f) {
		struct stat st;
		return stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(f.c_str(), X_OK) == 0;
	};
	if (name.find('/') != std::string::npos)
		return runnable(name) ? "" : "no such executable file";
	const char *path = std::getenv("PATH");
	std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (std::string dir; std::getline(dirs, dir, ':');)
		if (runnable((dir.empty() ? std::string(".") : dir) + "/" + name))
			return "";
	return "no such command in PATH";
}

// Step 1: run the command under the kernel trace, reading each process that
// registers as its ib_umem_get passes (and again as it exits).
struct traced_command {
	pid_t pid = 0;
	int exit_code = 0;
	bool exits_followed = false;	// PTRACE_SEIZE took: exits stop once
	std::string trace_text;
	std::map<std::pair<int, int>, seen_registration> snapshots;	// (pid, n-th ib_umem_get)
};

// Reads pid's memlock state and the placement of the range entry names.
void read_process(int pid, const trace_event &entry, seen_registration &s, const char *when)
{
	auto memlock = read_process_memlock(pid);
	if (memlock.known) {
		s.memlock = memlock;
		s.when = when;
	}
	try {
		diagnosis d;
		d.address = uint64_t(entry.number("addr").value_or(0));
		d.length = uint64_t(entry.number("size").value_or(0));
		read_placement(d, pid);
		s.pages = d.pages;
		s.allocation_class = d.allocation_class;
		s.mapping = d.mapping;
		s.placement_error.clear();
	} catch (const std::exception &ex) {
		s.placement_error = ex.what();
	}
}

// The trace pipe's lines as they come: each ib_umem_get's process is read
// at once, while it runs (a long-lived one keeps its state).
class trace_reader {
public:
	trace_reader(traced_command &t, unique_fd pipe) : t_(t), pipe_(std::move(pipe)) {}

	bool open() const { return bool(pipe_); }
	int fd() const { return pipe_.get(); }
	void close() { pipe_.reset(); }

	void drain()
	{
		char buf[65536];
		ssize_t got;
		while (pipe_ && (got = ::read(pipe_.get(), buf, sizeof(buf))) > 0)
			consume(std::string(buf, size_t(got)));
	}

private:
	void consume(const std::string &chunk)
	{
		partial_ += chunk;
		size_t nl;
		while ((nl = partial_.find('\n')) != std::string::npos) {
			const std::string line = partial_.substr(0, nl + 1);
			partial_.erase(0, nl + 1);
			t_.trace_text += line;
			auto e = parse_trace_line(line);
			if (!e || e->name != "ib_umem_get")
				continue;
			seen_registration s;
			s.entry = *e;
			read_process(e->pid, *e, s, "read as ib_umem_get ran");
			t_.snapshots[{e->pid, umem_count_[e->pid]++}] = s;
		}
	}

	traced_command &t_;
	unique_fd pipe_;
	std::string partial_;
	std::map<int, int> umem_count_;
};

// Forks the command, stopped until the trace follows it; execs it when the
// returned pipe end is closed. 127 from the child if it cannot exec.
pid_t fork_waiting(const explain_options &opt, unique_fd &go)
{
	int ready[2];
	if (pipe2(ready, O_CLOEXEC))
		throw last_sys_error("pipe2");
	std::cout.flush();
	const pid_t child = fork();
	if (child < 0)
		throw last_sys_error("fork");
	if (child == 0) {
		::close(ready[1]);
		char c;
		while (::read(ready[0], &c, 1) < 0 && errno == EINTR)
			;
		// With --format json, standard output is the JSON alone: the command's goes
		// to standard error.
		if (opt.json)
			dup2(STDERR_FILENO, STDOUT_FILENO);
		std::vector<char *> argv;
		for (const auto &a : opt.command)
			argv.push_back(const_cast<char *>(a.c_str()));
		argv.push_back(nullptr);
		execvp(argv[0], argv.data());
		std::fprintf(stderr, "pinmatrix explain: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	::close(ready[0]);
	go.reset(ready[1]);
	return child;
}

// One ptrace stop of a traced process: at its exit (PTRACE_EVENT_EXIT, its
// memory still there) read again what it registered; pass a signal on.
void on_stop(pid_t w, int st, traced_command &t, trace_reader &reader)
{
	const int event = st >> 16;
	int deliver = 0;
	if (event == PTRACE_EVENT_EXIT) {
		reader.drain();	// its events are in the buffer by now
		for (auto &[key, s] : t.snapshots)
			if (key.first == w && (s.pages.empty() || !s.memlock))
				read_process(w, s.entry, s, "read as the process exited");
	} else if (event == 0) {
		deliver = WSTOPSIG(st);
	}
	ptrace(PTRACE_CONT, w, nullptr, deliver);
}

// Reaps and continues the command's processes until the command is gone;
// the trace pipe read between times. The command's wait status.
int wait_command(traced_command &t, trace_reader &reader)
{
	int status = 0;
	for (bool done = false; !done;) {
		if (reader.open()) {
			pollfd p{reader.fd(), POLLIN, 0};
			poll(&p, 1, 20);
			reader.drain();
		} else {
			usleep(20'000);
		}
		int st = 0;
		pid_t w;
		while ((w = waitpid(-1, &st, __WALL | WNOHANG)) > 0) {
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				if (w == t.pid) {
					status = st;
					done = true;
				}
			} else if (WIFSTOPPED(st)) {
				on_stop(w, st, t, reader);
			}
		}
		if (w < 0 && errno == ECHILD)
			done = true;
	}
	return status;
}

traced_command trace_command(const explain_options &opt, trace_session &trace)
{
	traced_command t;
	unique_fd go;
	t.pid = fork_waiting(opt, go);
	// Its processes stop once as they exit, so that a command that gives up
	// on a failed registration is still read; fork, vfork and clone follow.
	t.exits_followed = ptrace(PTRACE_SEIZE, t.pid, nullptr,
				  PTRACE_O_TRACEEXIT | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
					  PTRACE_O_TRACECLONE) == 0;
	trace.follow(t.pid);
	trace_reader reader(t, unique_fd(trace.open_pipe()));
	go.reset();
	const int status = wait_command(t, reader);
	reader.drain();
	reader.close();
	trace.stop();
	t.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return t;
}

// Step 2: the events cut into registrations, each ib_umem_get of a process
// until its next one, with what was read of its process.
std::vector<seen_registration> split_registrations(traced_command &t)
{
	std::vector<seen_registration> regs;
	std::map<int, size_t> open;
	std::map<int, int> nth;
	for (auto &e : parse_trace(t.trace_text)) {
		if (e.name == "ib_umem_get") {
			const int n = nth[e.pid]++;
			seen_registration s = t.snapshots.count({e.pid, n}) ? t.snapshots[{e.pid, n}] : seen_registration{};
			s.pid = e.pid;
			s.task = e.task;
			regs.push_back(s);
			open[e.pid] = regs.size() - 1;
		}
		if (open.count(e.pid))
			regs[open[e.pid]].events.push_back(e);
	}
	return regs;
}

// Step 3: a failed registration diagnosed (nullopt: it did not fail).
std::optional<diagnosis> diagnose(const seen_registration &r, size_t index, const trace_session &trace,
				  bool exits_followed)
{
	std::optional<int> err;
	for (const auto &e : r.events)
		if (e.name == "provider_reg_mr_ret" || e.name == "ib_umem_get_ret")
			if (auto x = return_errno(e))
				err = *x;
	if (!err)
		return std::nullopt;
	diagnosis d;
	d.err = *err;
	const trace_event &entry = r.events.front();
	d.address = uint64_t(entry.number("addr").value_or(0));
	d.length = uint64_t(entry.number("size").value_or(0));
	d.title = "registration " + std::to_string(index + 1) + ": pid " + std::to_string(r.pid) + " (" + r.task + ")";
	d.allocation_class = r.allocation_class;
	d.mapping = r.mapping;
	d.pages = r.pages;
	const uint64_t ps = page_size();
	d.pages_total = ((d.address + d.length + ps - 1) / ps) - d.address / ps;
	if (r.memlock && r.memlock->known) {
		d.memlock = r.memlock;
		d.memlock_note = "  [" + r.when + "]";
	} else {
		d.memlock_note = "  (the process was gone before it could be read)";
	}
	path_inputs in;
	in.err = d.err;
	in.kernel_release = trace.kernel_release();
	in.foll = running_foll_table();
	in.swp_pfn_bits = trace.swp_pfn_bits();
	in.missing_roles = trace.missing_roles();
	for (const auto &p : d.pages)
		if (p.pfn) {
			in.before = path_page{*p.pfn, p.zone, p.cma_area.empty() ? "" : "CMA", p.longterm_pinnable};
			break;
		}
	d.trace = reconstruct_path(r.events, in);
	if (!r.placement_error.empty())
		d.notes.push_back("its pages could not be read: " + r.placement_error);
	if (!exits_followed)
		d.notes.push_back("its processes' exits could not be followed (ptrace refused): a process that "
				  "exits right after the failure may be gone before it is read");
	d.notes.push_back(module_note());
	classify(d);
	return d;
}

// Step 4: what the command did, its failed registrations explained.
void print_explained(std::ostream &out, const explain_options &opt, const traced_command &t,
		     const trace_session &trace, size_t seen, const std::vector<diagnosis> &failed)
{
	out << "pinmatrix explain: `" << join(opt.command, " ") << "` (pid " << t.pid << ") exited " << t.exit_code << "\n";
	if (!trace.available()) {
		out << "no kernel trace: its registrations cannot be seen here";
		for (const auto &n : trace.describe().value("notes", json::array()))
			out << " (" << n.get<std::string>() << ")";
		out << "\n";
		return;
	}
	out << "registrations seen (ib_umem_get): " << seen << ", failed: " << failed.size() << "\n";
	for (const auto &m : trace.missing_roles())
		out << "  not traced on this kernel: " << m << "\n";
	out << "\n";
	for (const auto &d : failed) {
		print(out, d);
		out << "\n";
	}
}

int explain_command(const explain_options &opt, std::ostream &out)
{
	// As env(1) and time(1): 127 and one line for a command that is not
	// there, found before the kernel trace is set up for it.
	if (const auto why = why_not_runnable(opt.command.at(0)); !why.empty()) {
		std::fprintf(stderr, "pinmatrix explain: cannot run %s: %s\n", opt.command[0].c_str(), why.c_str());
		return 127;
	}
	auto trace = trace_session::start();
	traced_command t = trace_command(opt, *trace);
	const auto regs = split_registrations(t);
	std::vector<diagnosis> failed;
	for (size_t i = 0; i < regs.size(); i++)
		if (auto d = diagnose(regs[i], i, *trace, t.exits_followed))
			failed.push_back(std::move(*d));
	if (opt.json) {
		json doc = {{"command", opt.command}, {"exit_code", t.exit_code}, {"kernel_trace", trace->describe()},
			    {"registrations_seen", regs.size()}, {"failed", json::array()}};
		for (const auto &d : failed)
			doc["failed"].push_back(to_json(d));
		out << doc.dump(2) << "\n";
	} else {
		print_explained(out, opt, t, *trace, regs.size(), failed);
	}
	return t.exit_code;
}

} // namespace

address_range parse_address_range(const std::string &text)
{
	address_range r;
	const size_t dash = text.find('-'), plus = text.find('+');
	std::optional<uint64_t> start;
	if (dash != std::string::npos) {
		start = parse_hex(text.substr(0, dash));
		auto end = parse_hex(text.substr(dash + 1));
		if (!start || !end)
			throw usage_error("range '" + text + "': expected START-END in hex (as /proc/PID/maps prints it)");
		r.end = *end;
	} else if (plus != std::string::npos) {
		start = parse_hex(text.substr(0, plus));
		auto len = parse_length(text.substr(plus + 1), text);
		if (!start || !len)
			throw usage_error("range '" + text + "': expected START+LENGTH (START hex, LENGTH in bytes, K, M, G or 0x hex)");
		if (__builtin_add_overflow(*start, *len, &r.end))
			throw usage_error("range '" + text + "': wraps around 64 bits");
	} else {
		start = parse_hex(text);
		if (!start)
			throw usage_error("range '" + text + "': expected START-END, START+LENGTH or START (hex)");
		if (__builtin_add_overflow(*start, uint64_t(page_size()), &r.end))
			throw usage_error("range '" + text + "': wraps around 64 bits");
	}
	r.start = *start;
	if (r.end <= r.start)
		throw usage_error("range '" + text + "': empty");
	return r;
}

int explain(const explain_options &opt, std::ostream &out)
{
	if (!opt.command.empty()) {
		if (opt.pid || !opt.range.empty())
			throw usage_error("explain: give PID RANGE, or -- COMMAND, not both");
		return explain_command(opt, out);
	}
	if (!opt.pid || opt.range.empty())
		throw usage_error("explain: give PID RANGE (e.g. 1234 0x7f0000000000+64K), or -- COMMAND ARGS");
	return explain_pid(opt, out);
}

} // namespace pinmatrix
