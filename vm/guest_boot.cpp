// SPDX-License-Identifier: GPL-2.0
#include "guest_boot.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "accel.hpp"
#include "kernel_info.hpp"
#include "parallel_groups.hpp"
#include "qmp.hpp"
#include "report_input.hpp"
#include "serial_log.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// QEMU, started by us and killed only by its PID. QEMU writes its PID to
// pid_file (-pidfile) for whoever must find it; the file goes when it ends.
// It never outlives the thread that started it: the destructor kills it,
// and where no destructor runs (pinmatrix killed by SIGTERM, SIGINT or
// SIGKILL), the kernel does (PR_SET_PDEATHSIG).
class qemu_process {
public:
	qemu_process(const std::vector<std::string> &argv, const fs::path &log, fs::path pid_file)
		: pid_file_(std::move(pid_file))
	{
		unique_fd logfd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
		if (!logfd)
			throw last_sys_error("open " + log.string());
		const pid_t parent = getpid();
		pid_ = fork();
		if (pid_ < 0)
			throw last_sys_error("fork");
		if (pid_ == 0) {
			// The parent may have died before the death signal was set.
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
				_exit(127);
			int null = ::open("/dev/null", O_RDONLY);
			dup2(null, STDIN_FILENO);
			dup2(logfd.get(), STDOUT_FILENO);
			dup2(logfd.get(), STDERR_FILENO);
			exec_or_die(argv);
		}
	}
	qemu_process(const qemu_process &) = delete;
	qemu_process &operator=(const qemu_process &) = delete;
	~qemu_process()
	{
		if (pid_ > 0) {
			kill(pid_, SIGKILL);
			waitpid(pid_, nullptr, 0);
		}
		std::error_code ignored;
		fs::remove(pid_file_, ignored);
	}

	// Exit status (128 + signal when a signal ended it), or nullopt when it
	// was still running at the deadline (then it has been killed, after
	// at_deadline()) or when give_up() said so (killed at once).
	// Meanwhile every_half_second(), when given.
	std::optional<int> wait_for(std::chrono::seconds limit, const std::function<void()> &at_deadline,
				    const std::function<void()> &every_half_second = {},
				    const std::function<bool()> &give_up = {})
	{
		const auto deadline = std::chrono::steady_clock::now() + limit;
		auto next_tick = std::chrono::steady_clock::now();
		for (;;) {
			if (every_half_second && std::chrono::steady_clock::now() >= next_tick) {
				every_half_second();
				next_tick += std::chrono::milliseconds(500);
			}
			int status = 0;
			pid_t r = waitpid(pid_, &status, WNOHANG);
			if (r == pid_) {
				pid_ = -1;
				if (WIFSIGNALED(status))
					killed_by_ = WTERMSIG(status);
				return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			}
			if (r < 0 && errno != EINTR)
				throw last_sys_error("waitpid qemu");
			if (give_up && give_up()) {
				kill(pid_, SIGKILL);
				waitpid(pid_, nullptr, 0);
				pid_ = -1;
				return std::nullopt;
			}
			if (std::chrono::steady_clock::now() > deadline) {
				at_deadline();
				kill(pid_, SIGKILL);
				waitpid(pid_, nullptr, 0);
				pid_ = -1;
				return std::nullopt;
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		}
	}
	// The signal that ended QEMU when it was not pinmatrix's timeout.
	int killed_by() const { return killed_by_; }

private:
	pid_t pid_ = -1;
	int killed_by_ = 0;
	fs::path pid_file_;
};

// A guest still running at its timeout is asked for what its tasks and
// CPUs are doing before QEMU is killed: Alt+SysRq on its keyboard through
// QMP (console loglevel 9 first, so that the dumps reach the serial log
// under `quiet`; then blocked tasks, CPU backtraces, all tasks). Waits
// until the serial log stops growing (at most 15 s); what was asked and
// whether the guest answered goes into the results.
nlohmann::json dump_wedged_guest(const qmp_socket &qmp, const fs::path &serial)
{
	const std::string keys = "9wlt";
	nlohmann::json e = {{"asked", "sysrq 9 (loglevel), w (blocked tasks), l (CPU backtraces), t (all tasks), "
				      "by QMP sendkey"}};
	std::error_code ec;
	const auto before = fs::file_size(serial, ec);
	if (const std::string why = qmp.send_sysrq(keys); !why.empty()) {
		e["answered"] = false;
		e["note"] = "not sent: " + why;
		return e;
	}
	auto size = before;
	for (int quiet_ms = 0, waited_ms = 0; quiet_ms < 1500 && waited_ms < 15000; waited_ms += 250) {
		std::this_thread::sleep_for(std::chrono::milliseconds(250));
		const auto now = fs::file_size(serial, ec);
		quiet_ms = now == size && now != before ? quiet_ms + 250 : 0;
		size = now;
	}
	std::ifstream in(serial);
	in.seekg(std::streamoff(ec ? 0 : before));
	const std::string added((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	e["answered"] = added.find("sysrq: ") != std::string::npos;
	e["serial_log_bytes"] = added.size();
	if (!e["answered"])
		e["note"] = "no sysrq output on the serial console: the guest is wedged past its keyboard "
			    "interrupt, or its kernel has no i8042/atkbd or MAGIC_SYSRQ";
	return e;
}

// What the guest had reported when its timeout came: its results and its
// job's exit code. The guest runs on while its dumps are asked for (up to
// 15 s), and a case it finishes then finished after the timeout: restore()
// puts the files back as they were, so that the run is judged on what was
// done in time.
class guest_report_at_timeout {
public:
	explicit guest_report_at_timeout(const fs::path &guest_dir) : dir_(guest_dir)
	{
		for (const char *f : files) {
			try {
				if (fs::exists(dir_ / f))
					saved_[f] = read_text_file((dir_ / f).string());
			} catch (const std::exception &) {
				unread_.insert(f);	// left as it will be
			}
		}
	}
	// Whether anything had changed since.
	bool restore() const
	{
		bool changed = false;
		std::error_code ec;
		for (const char *f : files) {
			if (unread_.count(f))
				continue;
			const auto was = saved_.find(f);
			const bool now = fs::exists(dir_ / f);
			if (was == saved_.end()) {
				changed |= now;
				fs::remove(dir_ / f, ec);
			} else if (!now || read_text_file(dir_ / f) != was->second) {
				changed = true;
				std::ofstream(dir_ / f, std::ios::binary | std::ios::trunc) << was->second;
			}
		}
		return changed;
	}

private:
	static constexpr const char *files[] = {"results.json", "exit_code"};
	fs::path dir_;
	std::map<std::string, std::string> saved_;
	std::set<std::string> unread_;
};

// QEMU until the guest powers off, or its timeout: then the guest's dumps
// (sysrq through QMP) before the kill, its results as they were at it.
// With a start bound (a KVM guest), QEMU is killed when the guest's job has
// not started (stage2's guest/timeline) by then. Meanwhile watch(), every
// half second, when given.
qemu_run boot_guest(const group_spec &g, const std::vector<std::string> &argv, const qmp_socket &qmp,
		    const std::function<void()> &watch, std::chrono::seconds start_bound = {})
{
	const fs::path guest_dir = g.out / "guest";
	qemu_run q;
	const auto t0 = std::chrono::steady_clock::now();
	std::optional<guest_report_at_timeout> at_timeout;
	bool started = false;
	const auto not_started_in_time = [&] {
		if (started || start_bound.count() == 0 || std::chrono::steady_clock::now() - t0 < start_bound)
			return false;
		started = fs::exists(guest_dir / "timeline");
		return !started;
	};
	{
		qemu_process qemu(argv, g.out / "qemu.log", g.out / "qemu.pid");
		q.status = qemu.wait_for(std::chrono::seconds(g.guest.timeout_s), [&] {
			at_timeout.emplace(guest_dir);
			q.wedged_dump = dump_wedged_guest(qmp, g.out / "serial.log");
		}, watch, not_started_in_time);
		q.signal = qemu.killed_by();
	}
	if (!q.status && !at_timeout)
		q.start_bound_s = static_cast<int>(start_bound.count());
	if (at_timeout && at_timeout->restore())
		q.wedged_dump["note_results"] = "the guest reported more while its dumps were taken, after its "
						"timeout: not counted (results as at the timeout)";
	q.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	return q;
}

// Where a boot's seconds went, from the guest's uptime marks (stage2 and the
// job write DIR/guest/timeline): boot (kernel start to the job), setup (rxe,
// modules), run (pinmatrix run: placement fill and cases), bench, finish
// (the kernel log, the exit code), qemu (QEMU's start before the kernel, the
// power-off and QEMU's exit). Empty when the guest left no marks.
json guest_phases(const fs::path &guest_dir, double wall_s)
{
	std::map<std::string, double> at;
	std::ifstream in(guest_dir / "timeline");
	for (std::string name; in >> name;) {
		double up = 0;
		if (in >> up)
			at.emplace(name, up);
	}
	if (!at.count("job-start"))
		return json::object();
	json p = json::object();
	const auto span = [&](const char *phase, const char *from, const char *to) {
		if (at.count(from) && at.count(to) && at[to] >= at[from])
			p[phase] = at[to] - at[from];
	};
	p["boot"] = at["job-start"];
	span("setup", "job-start", "runner-start");
	span("run", "runner-start", at.count("bench-start") ? "bench-start" : "job-end");
	span("bench", "bench-start", "job-end");
	span("finish", "job-end", "power-off");
	if (at.count("power-off") && wall_s >= at["power-off"])
		p["qemu"] = wall_s - at["power-off"];
	return p;
}

std::string first_line_of(const fs::path &file)
{
	std::ifstream in(file);
	std::string line;
	std::getline(in, line);
	return line;
}

// A KVM boot that did not start the guest's job: QEMU failed (here -cpu
// host aborts on an MSR) or the job had not started at the bound (a guest
// hung before its kernel's first line). "" when it started.
std::string kvm_did_not_start(const qemu_run &q, const fs::path &guest_dir)
{
	if (fs::exists(guest_dir / "timeline"))
		return "";
	if (q.start_bound_s)
		return "the guest's job did not start within " + std::to_string(q.start_bound_s) + " s under KVM";
	if (q.status && *q.status != 0)
		return "QEMU exited with status " + std::to_string(*q.status) + " under KVM";
	return "";
}

// After a KVM boot that did not start: the attempt's logs kept under
// NAME-kvm.log, and whatever the guest wrote cleared for the TCG boot.
void set_kvm_attempt_aside(const fs::path &out)
{
	std::error_code ec;
	for (const char *log : {"serial", "qemu"})
		fs::rename(out / (std::string(log) + ".log"), out / (std::string(log) + "-kvm.log"), ec);
	for (const char *f : {"timeline", "results.json", "exit_code", "job.log"})
		fs::remove(out / "guest" / f, ec);
}

// The KVM failure as results.json's vm.accel_fallback, and said once.
nlohmann::json fall_back_to_tcg(const group_spec &g, const std::string &why)
{
	const std::string first_line = report::one_line(first_line_of(g.out / "qemu-kvm.log"));
	const std::string full = why + (first_line.empty() ? "" : ": " + first_line);
	remember_kvm_failure(g.guest.cache, g.guest.kvm_cpu, full, g.kernel.name);
	say_line("pinmatrix vm: " + g.label + "KVM did not start the guest (" + full +
		 "): booting it with TCG; guests after it go straight to TCG until the host reboots");
	return {{"tried", "kvm"}, {"why", full}, {"earlier", false}, {"serial_log", "serial-kvm.log"},
		{"qemu_log", "qemu-kvm.log"}};
}

} // namespace

// Why once more: under TCG, stock 6.12 now and then oopses in early boot (an
// int3 Oops in sched_clock_cpu, seen in a fresh-clone CI run), before any
// case could run or see it. A kernel that always dies there
// dies again and the run is the error it was. The dead boot's console is
// kept (serial-boot-1.log) and named, with its first bug line, in
// vm.boot_retries. Under --accel auto a KVM boot that does not start its
// job (vm/accel.hpp) is booted again with TCG; that is not a retry.
booted_guest boot_until_its_job_starts(const group_spec &g, const prepared_guest &guest, const guest_needs &needs,
				       const std::string &cmdline, const std::function<void()> &watch)
{
	constexpr int boots = 2;
	booted_guest b;
	accel_choice accel = choose_accel(g.guest.accel, g.guest.cache, g.guest.kvm_cpu);
	b.accel = accel.accel;
	b.accel_fallback = accel.fallback;
	for (int attempt = 1;; ++attempt) {
		const qmp_socket qmp;
		std::optional<virtiofs_shares> virtiofs;
		if (guest.kernel.share == share_transport::virtiofs)
			virtiofs.emplace(g.out / "guest", g.out);
		b.argv = qemu_argv(g, guest, needs, cmdline, qmp, b.accel, virtiofs ? &*virtiofs : nullptr);
		const bool kvm = b.accel == "kvm";
		b.q = boot_guest(g, b.argv, qmp, watch, kvm ? kvm_start_bound : std::chrono::seconds{});
		if (kvm) {
			const std::string why = kvm_did_not_start(b.q, g.out / "guest");
			if (!why.empty() && accel.may_fall_back) {
				set_kvm_attempt_aside(g.out);
				b.accel_fallback = fall_back_to_tcg(g, why);
				b.accel = "tcg";
				--attempt;	// not a retry of a dead kernel
				continue;
			}
		}
		if (attempt == boots || !died_before_its_job(b.q, g.out / "guest"))
			return b;
		const std::string kept = "serial-boot-" + std::to_string(attempt) + ".log";
		fs::rename(g.out / "serial.log", g.out / kept);
		const std::string alarm = first_console_alarm(g.out / kept);
		b.retries.push_back({{"serial_log", kept},
				     {"wall_s", b.q.wall_s},
				     {"console_alarm", alarm.empty() ? json(nullptr) : json(alarm)}});
		say_line("pinmatrix vm: " + g.label + "the guest's kernel ended before its job started" +
			 (alarm.empty() ? "" : " (" + report::one_line(alarm) + ")") + ": booting it once more");
	}
}

bool died_before_its_job(const qemu_run &q, const fs::path &guest_dir)
{
	return q.status && *q.status == 0 && !q.signal && !fs::exists(guest_dir / "timeline");
}

std::optional<int> guest_job_exit(const fs::path &out)
{
	try {
		if (fs::exists(out / "guest" / "exit_code"))
			return std::stoi(read_text_file((out / "guest" / "exit_code").string()));
	} catch (const std::exception &) {
	}
	return console_job_exit(out / "serial.log");
}

std::string how_it_ended(const qemu_run &q, const std::optional<int> &job_status, int timeout_s)
{
	if (!q.status && q.start_bound_s)
		return "the guest's job did not start within " + std::to_string(q.start_bound_s) +
		       " s under KVM: killed (--accel kvm does not fall back; --accel auto boots with TCG then)";
	if (!q.status)
		return "guest still running after " + std::to_string(timeout_s) + " s: killed" +
		       (q.wedged_dump.value("answered", false) ? ", after its task and CPU dumps (sysrq by QMP: serial.log)"
							      : "");
	if (q.signal)
		return "QEMU was killed by signal " + std::to_string(q.signal) + " (" + strsignal(q.signal) +
		       "), not by pinmatrix";
	if (*q.status)
		return "QEMU exited with status " + std::to_string(*q.status) + " (see qemu.log)";
	if (!job_status)
		return "guest stopped before the job finished (panic or reset?)";
	return "";
}

json vm_record(const group_spec &g, const booted_guest &booted, const std::string &cmdline,
	       const std::optional<int> &job_status, const std::string &ended)
{
	const qemu_run &q = booted.q;
	json vm = {{"accel", booted.accel},
		   {"memory_mib", guest_memory_mib(g)},
		   {"cpus", g.guest.cpus},
		   {"cmdline", cmdline},
		   {"qemu_argv", booted.argv},
		   {"wall_s", q.wall_s},
		   {"qemu_exit", q.status ? json(*q.status) : json("killed")},
		   {"job_exit", job_status ? json(*job_status) : json(nullptr)},
		   {"ended", ended.empty() ? json(nullptr) : json(ended)},
		   {"serial_log", "serial.log"}};
	if (!q.wedged_dump.is_null())
		vm["wedged_guest_dump"] = q.wedged_dump;
	if (!booted.retries.empty())
		vm["boot_retries"] = booted.retries;
	if (!booted.accel_fallback.is_null())
		vm["accel_fallback"] = booted.accel_fallback;
	if (auto phases = guest_phases(g.out / "guest", q.wall_s); !phases.empty())
		vm["phases_s"] = phases;
	return vm;
}

std::string phases_text(const json &phases)
{
	std::string out;
	char buf[64];
	for (const char *name : {"boot", "setup", "run", "bench", "finish", "qemu"}) {
		if (!phases.contains(name))
			continue;
		std::snprintf(buf, sizeof(buf), "%s%s %.1f s", out.empty() ? ": " : ", ", name,
			      phases[name].get<double>());
		out += buf;
	}
	return out;
}

json harness_share(const json &cases, double wall_s)
{
	double cases_s = 0;
	bool timed = false;
	for (const auto &c : cases)
		if (c.is_object() && c.contains("duration_ns") && c["duration_ns"].is_number()) {
			cases_s += c["duration_ns"].get<double>() / 1e9;
			timed = true;
		}
	if (!timed || wall_s <= 0)
		return json::object();
	const double harness_s = std::max(0.0, wall_s - cases_s);
	return {{"cases_s", cases_s}, {"harness_s", harness_s}, {"share", harness_s / wall_s}};
}

std::string harness_text(const json &vm)
{
	const json h = vm.value("harness", json::object());
	if (!h.contains("cases_s") || !h.contains("share"))
		return "";
	char buf[80];
	std::snprintf(buf, sizeof(buf), ", cases %.1f s, harness %.0f%%", h["cases_s"].get<double>(),
		      100 * h["share"].get<double>());
	return buf;
}

constexpr double prepared_said_ms = 1000;

std::string prepared_text(const step_times &steps)
{
	double total = 0;
	std::string text;
	char buf[128];
	for (const auto &[step, ms] : steps) {
		total += ms;
		std::snprintf(buf, sizeof(buf), " %.1f s", ms / 1e3);
		text += (text.empty() ? "" : ", ") + step + buf;
	}
	if (total < prepared_said_ms)
		return "";
	std::snprintf(buf, sizeof(buf), "the guest prepared in %.1f s: ", total / 1e3);
	return buf + text;
}

double prepared_seconds(const json &vm)
{
	double ms = 0;
	if (vm.is_object() && vm.contains("prepare_ms"))
		for (const auto &step : step_times_from_json(vm["prepare_ms"]))
			ms += step.second;
	return ms / 1e3;
}

std::string host_root_unfit_for_guest(const fs::path &root)
{
	std::vector<std::string> missing;
	for (const char *dir : {"lib/modules", "run", "dev", "proc", "sys"}) {
		std::error_code ec;
		if (!fs::is_directory(root / dir, ec))
			missing.push_back("/" + std::string(dir));
	}
	std::string why;
	if (!missing.empty())
		why = "the guest boots on the host's root and mounts over its /lib/modules, /run, /dev, /proc and "
		      "/sys; this host has no " + join(missing, ", ") +
		      " (a container, or a chroot with no kernel installed?): mkdir -p " + join(missing, " ") +
		      ", and run again";
	std::error_code ec;
	if (!fs::is_regular_file(root / "bin/bash", ec))
		why += std::string(why.empty() ? "" : "; ") + "the guest runs the host's /bin/bash: this host has none";
	return why;
}

} // namespace pinmatrix
