// SPDX-License-Identifier: GPL-2.0
#include "launcher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cctype>
#include <fstream>
#include <functional>
#include <iostream>
#include <numeric>
#include <map>
#include <mutex>
#include <set>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "boot.hpp"
#include "data_dir.hpp"
#include "kernel_info.hpp"
#include "kernel_log.hpp"
#include "kernels.hpp"
#include "ktap.hpp"
#include "matrix_file.hpp"
#include "qmp.hpp"
#include "plan.hpp"
#include "report_input.hpp"
#include "reports.hpp"
#include "results.hpp"
#include "terminal_table.hpp"
#include "runner.hpp"
#include "suite.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"
#include "user_input.hpp"
#include "bench_vm.hpp"
#include "cache_lock.hpp"
#include "parallel_groups.hpp"

namespace pinmatrix {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char *const qboot = "/usr/share/qemu/qboot.rom";

std::string shell_quote(const std::string &s)
{
	std::string q = "'";
	for (char c : s)
		q += c == '\'' ? std::string("'\\''") : std::string(1, c);
	return q + "'";
}

std::string self_exe()
{
	return fs::read_symlink("/proc/self/exe").string();
}

// One line for people on stdout, whole even while guests run side by side.
void say_line(const std::string &line)
{
	static std::mutex lines;
	std::lock_guard lock(lines);
	std::cout << line << std::endl;
}

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
	// at_deadline()). Meanwhile every_half_second(), when given.
	std::optional<int> wait_for(std::chrono::seconds limit, const std::function<void()> &at_deadline,
				    const std::function<void()> &every_half_second = {})
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

// The lines of the serial log that explain a dead guest.
std::string serial_excerpt(const fs::path &serial)
{
	std::ifstream in(serial);
	std::vector<std::string> lines;
	for (std::string l; std::getline(in, l);) {
		if (!l.empty() && l.back() == '\r')
			l.pop_back();
		lines.push_back(l);
	}
	static const std::regex alarm(
		"Kernel panic|BUG:|Oops|WARNING:|Call Trace|pinmatrix-init: ERROR|pinmatrix: ERROR|hung_task|"
		"blocked for more than");
	std::string out;
	int taken = 0;
	for (size_t i = 0; i < lines.size() && taken < 80; i++) {
		if (!std::regex_search(lines[i], alarm))
			continue;
		out += lines[i] + "\n";
		taken++;
		// The frames of a call trace say where it happened (a panic's task dump).
		if (lines[i].find("Call Trace") == std::string::npos)
			continue;
		for (; i + 1 < lines.size() && taken < 80; i++) {
			out += lines[i + 1] + "\n";
			taken++;
			if (lines[i + 1].find("</TASK>") != std::string::npos)
				break;
		}
	}
	if (!out.empty())
		return out;
	for (size_t i = lines.size() > 15 ? lines.size() - 15 : 0; i < lines.size(); i++)
		out += lines[i] + "\n";
	return out;
}


// The job's exit code as stage2 printed it on the console, if it did.
std::optional<int> console_job_exit(const fs::path &serial)
{
	std::ifstream in(serial);
	static const std::regex done("pinmatrix-stage2: job exit code ([0-9]+)");
	std::optional<int> code;
	std::smatch m;
	for (std::string l; std::getline(in, l);)
		if (std::regex_search(l, m, done))
			code = std::stoi(m[1]);
	return code;
}

// The runner's console line about case ID's record, when it could not be
// written ("pinmatrix: ERROR: case B (2/3): its record: ...").
std::string unwritten_record_line(const fs::path &serial, const std::string &id)
{
	std::ifstream in(serial);
	const std::string prefix = "pinmatrix: ERROR: case " + id + " (";
	for (std::string l; std::getline(in, l);)
		if (const auto at = l.find(prefix); at != std::string::npos) {
			while (!l.empty() && l.back() == '\r')
				l.pop_back();
			return l.substr(at);
		}
	return "";
}

// One guest boot: a kernel, a boot placement, the cases to run in it.
struct group_spec {
	kernel_spec kernel;
	const boot_placement *boot = nullptr;
	std::string append;		// extra
	unsigned memory_mib = 0;
	unsigned cpus = 1;
	std::vector<std::string> cases;
	std::string guest_cmd;
	std::string fault;
	int timeout_s = 300;
	int case_timeout_s = 60;
	bool strict = false;	// --strict to the guest's run
	fs::path cache;
	fs::path out;
	pin_sources pins;
	unsigned ssh_port = 0;
	fs::path ssh_key;
	bool bench = false;	// pinmatrix_bench after the cases (benchmarks/)
	std::string bench_args;
	std::string label;	// before its lines while other guests run beside it
};

struct group_outcome {
	json doc;			// the group's results.json
	std::optional<int> guest_cmd_exit;
	std::string ended;		// why the guest ended early, if it did
	std::vector<std::string> kernel_alarms;	// from guest/kernel.log
};

// The guest's kernel log as vm/guest/stage2 saved it after the job: a
// report of a kernel bug in it (KASAN, lockdep, a WARN ...) fails the run
// whatever the job said, and the record says which lines.
std::vector<std::string> note_guest_kernel_log(const fs::path &guest_dir, json &doc)
{
	const fs::path log = guest_dir / "kernel.log";
	if (!fs::exists(log))
		return {};
	auto alarms = kernel_alarms(read_text_file(log.string()));
	doc["kernel_log"] = {{"file", "guest/kernel.log"}, {"alarms", alarms}};
	return alarms;
}

// A run whose kernel reported a bug fails, unless it already failed worse.
int with_kernel_alarms(int rc, const std::vector<std::string> &alarms)
{
	if (alarms.empty())
		return rc;
	std::cout << "pinmatrix vm: FAIL: the guest kernel reported " << alarms.size()
		  << " bug line(s) (guest/kernel.log), first: " << report::one_line(alarms.front()) << std::endl;
	return rc == 0 || rc == 4 ? 1 : rc;
}

// `pinmatrix run ...` as the guest runs it.
std::vector<std::string> guest_run_argv(const group_spec &g, const fs::path &ko)
{
	std::vector<std::string> argv = {self_exe(), "run", "--out", "/run/pinmatrix", "--device", "rxe0",
					 "--placement", std::string(name(g.boot->restricted)), "--second-pin",
					 g.pins.second_pin};
	if (g.pins.without_module())
		argv.push_back("--no-module");
	else
		argv.insert(argv.end(), {"--module", ko.string(), "--first-pin", g.pins.first_pin});
	if (!g.cases.empty()) {
		std::string list;
		for (const auto &c : g.cases)
			list += (list.empty() ? "" : ",") + c;
		argv.insert(argv.end(), {"--cases", list});
	}
	if (!g.fault.empty())
		argv.insert(argv.end(), {"--fault", g.fault});
	argv.insert(argv.end(), {"--case-timeout", std::to_string(g.case_timeout_s)});
	if (g.strict)
		argv.push_back("--strict");
	return argv;
}

std::string shell_array(const std::vector<std::string> &argv)
{
	std::string out = "(";
	for (const auto &a : argv)
		out += (out.size() > 1 ? " " : "") + shell_quote(a);
	return out + ")";
}

std::vector<plan_entry> group_plan(const std::vector<std::unique_ptr<suite>> &suites, const group_spec &g);
suite_options group_suite_options(const group_spec &g);

// What the guest must prepare for its plan (matrix mode only: a command or
// a managed node runs no plan).
guest_needs needs_of(const group_spec &g)
{
	if (!g.guest_cmd.empty() || g.ssh_port)
		return {};
	return guest_needs_of(group_plan(make_suites(group_suite_options(g)), g));
}

// What vm/guest/job.sh runs, as the shell assignments it sources: the
// matrix (`pinmatrix run`, then the benchmarks with --bench), a command
// (--guest-cmd), or a managed node's sshd (--ssh-port).
std::string guest_job_env(const group_spec &g, const fs::path &modules)
{
	const fs::path ko = modules / "pinmatrix" / "pinmatrix.ko";
	const char *mode = g.ssh_port ? "ssh" : !g.guest_cmd.empty() ? "command" : "matrix";
	const guest_needs needs = needs_of(g);
	std::ostringstream env;
	env << "# Written by pinmatrix vm: what vm/guest/job.sh runs in the guest.\n"
	    << "job_mode=" << mode << "\n"
	    << "modules=" << shell_quote(modules.string()) << "\n"
	    << "module_ko=" << shell_quote(ko.string()) << "\n"
	    << "ualink_sim_ko=" << shell_quote((modules / "ualink_sim" / "ualink_sim.ko").string()) << "\n"
	    << "load_test_modules=" << (g.pins.without_module() ? 0 : 1) << "\n"
	    << "disk_dir=" << needs.disk_dir << "\n"
	    << "vdpa_sim=" << needs.vdpa_sim << "\n"
	    << "vfio_edu=" << needs.vfio_edu << "\n"
	    << "guest_cmd=" << shell_quote(g.guest_cmd) << "\n"
	    << "ssh_key=" << shell_quote(g.ssh_key.string()) << "\n"
	    << "ssh_port=" << g.ssh_port << "\n"
	    << "run_argv=" << shell_array(guest_run_argv(g, ko)) << "\n"
	    << "bench_argv="
	    << shell_array(g.bench ? bench::guest_argv(bench::bench_binary(), g.bench_args, ko)
				   : std::vector<std::string>{})
	    << "\n";
	return env.str();
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

// ": boot 2.9 s, setup 1.1 s, run 5.2 s, finish 0.3 s, qemu 0.7 s"
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

std::vector<plan_entry> group_plan(const std::vector<std::unique_ptr<suite>> &suites,
				   const group_spec &g)
{
	return select_plan(suites, g.cases);
}

suite_options group_suite_options(const group_spec &g)
{
	suite_options o;
	o.restricted = g.boot->restricted;
	o.pins = g.pins;
	return o;
}

// Every case of the group as a record of one verdict, with the reason.
json records_not_run(const group_spec &g, verdict v, const std::string &reason)
{
	const auto suites = make_suites(group_suite_options(g));
	json cases = json::array();
	for (const auto &[owner, c] : group_plan(suites, g)) {
		case_record r = owner->not_run(c, v, reason);
		r.suite = owner->name();
		cases.push_back(to_json(r));
	}
	return cases;
}

// x86 keeps 2,048 bytes of kernel command line (COMMAND_LINE_SIZE, its NUL included).
constexpr size_t max_cmdline = 2047;

std::string boot_append(const group_spec &g)
{
	return std::string(g.boot->append) + (g.append.empty() ? "" : " " + g.append);
}

// cryptomgr.notests: the crypto self-tests cost ~0.4 s of a TCG boot.
// sysrq_always_enabled: the keyboard's SysRq dumps for a wedged guest
// (dump_wedged_guest; Debian's default mask allows none of them).
// secretmem.enable=1: memfd_secret on 6.1 to 6.4 too (cases/backing/).
// rcupdate.rcu_cpu_stall_timeout=300 watchdog_thresh=60: the stall and
// soft-lockup detectors at their longest (300 s; 120 s). A TCG vCPU on a
// loaded host can go unscheduled for a minute (seen in CI: a boot's RCU
// stall report after 57 s without the CPU, which failed the run as a
// kernel bug); a case stuck in the kernel is caught by --case-timeout
// (60 s) and its task dump before either would speak.
// random.trust_cpu=on: the crng seeded from RDRAND at boot (qemu_argv's
// +rdrand) on kernels built without RANDOM_TRUST_CPU (the suite's own, from
// tinyconfig): else getrandom() answers EAGAIN for seconds, and
// mkfs.ext4 of the scratch disk took 4.1 s instead of 0.2 s.
// intel_iommu=on iommu=pt, with QEMU's intel-iommu (VFIO type1): IOMMU
// groups, and every device but the one vfio-pci takes in an identity domain
// (the 9p shares' virtio devices use no DMA API anyway).
std::string guest_cmdline(const fs::path &kernel_dir, const group_spec &g)
{
	return "console=ttyS0 panic=-1 quiet cryptomgr.notests sysrq_always_enabled secretmem.enable=1 "
	       "rcupdate.rcu_cpu_stall_timeout=300 watchdog_thresh=60 random.trust_cpu=on " +
	       std::string(needs_of(g).vfio_edu ? "intel_iommu=on iommu=pt " : "") + "pinmatrix.kdir=" +
	       kernel_dir.string() + " pinmatrix.stage2=" + (data_dir() / "vm/guest/stage2").string() + " " +
	       boot_append(g);
}

// The kernel's dir before it is prepared: an image's own, else a cache dir
// (kernels/debian-<ABI>, build-<key>, ...) no longer than this.
fs::path kernel_dir_bound(const group_spec &g)
{
	if (g.kernel.source == "image")
		return fs::absolute(g.kernel.user_dir);
	return g.cache / "kernels" / std::string(std::max<size_t>(64, g.kernel.abi.size() + 40), 'x');
}

// A path the guest reads from its kernel command line: its init splits
// that at spaces, and a quote or control character has no way through.
void require_cmdline_path(const fs::path &p, const std::string &what)
{
	const std::string s = p.string();
	if (std::any_of(s.begin(), s.end(), [](unsigned char c) {
		    return std::isspace(c) || std::iscntrl(c) || c == '"' || c == '\'';
	    }))
		throw usage_error(what + " '" + report::one_line(s) +
				  "': a space, quote or control character there would split the guest's "
				  "command line (choose a path without one)");
}

// What one guest asks for, checked before anything is written or locked.
void check_group(const group_spec &g)
{
	if (g.kernel.source == "image")
		require_cmdline_path(fs::absolute(g.kernel.user_dir), "image:");
	else
		require_cmdline_path(fs::absolute(g.cache), "--cache");
	require_cmdline_path(data_dir(), "the install directory");
	// QEMU's -virtfs and -qmp options are comma-separated: a comma in the
	// path would end it.
	if (g.out.string().find(',') != std::string::npos)
		throw usage_error("--out '" + report::one_line(g.out.string()) +
				  "': a comma there would split QEMU's -virtfs option (choose a path without one)");
	if (g.memory_mib && g.memory_mib < g.boot->memory_mib)
		throw usage_error("--memory " + std::to_string(g.memory_mib) + ": boot " + g.boot->name +
				  " needs at least " + std::to_string(g.boot->memory_mib) + " MiB");
	if (const size_t n = guest_cmdline(kernel_dir_bound(g), g).size(); n > max_cmdline)
		throw usage_error("--append: the guest's command line would take " + std::to_string(n) +
				  " bytes and x86 takes at most " + std::to_string(max_cmdline));
	select_plan(make_suites(group_suite_options(g)), g.cases);
}

// The group's record before anything is known of its kernel.
json group_doc(const group_spec &g, const std::string &append, unsigned memory)
{
	return {{"schema", results_schema},
		{"kernel", {{"name", g.kernel.name}, {"source", g.kernel.source}}},
		{"boot", {{"placement", g.boot->name}, {"append", append}, {"memory_mib", memory}, {"cpus", g.cpus}}},
		{"cases", json::array()}};
}

struct prepared_guest {
	guest_kernel kernel;
	fs::path modules, initrd;
};

// Kernel, modules, initramfs; then the kernel's config against the
// placement's needs. What stops it is the group's SKIP with the reason (no
// boot); a setup error (doc["setup_error"]) also writes nothing.
std::optional<std::string> prepare_guest(const group_spec &g, json &doc, prepared_guest &p)
{
	try {
		cache_entry_lock kernel_lock(g.cache, kernel_lock_name(g.kernel), "kernel '" + g.kernel.name + "'",
					     std::cerr);
		p.kernel = prepare_kernel(g.kernel, g.cache);
		doc["kernel"]["release"] = p.kernel.release;
		doc["kernel"]["describe"] = p.kernel.describe();
		json patches = json::array();
		for (const auto &f : g.kernel.patches)
			patches.push_back(f.filename().string());
		doc["kernel"]["patches"] = patches;
		if (!g.kernel.fragments.empty()) {
			json fragments = json::array();
			for (const auto &f : g.kernel.fragments)
				fragments.push_back(f.filename().string());
			doc["kernel"]["fragments"] = fragments;
		}
		if (auto cannot = unmet_kconfig(*g.boot, p.kernel.config, p.kernel.release))
			return cannot;
		cache_entry_lock entry_lock(g.cache, "entry-" + p.kernel.dir.filename().string(),
					    "the test modules and initramfs of " + p.kernel.dir.string(), std::cerr);
		p.modules = prepare_modules(p.kernel, g.cache);
		p.initrd = prepare_initramfs(p.kernel, g.cache);
		return std::nullopt;
	} catch (const unmet_need &e) {
		doc["setup_error"] = true;
		return e.what();
	} catch (const std::exception &e) {
		// Whatever else stops it (a cache that cannot be locked, an I/O
		// error) is this group's SKIP with the reason, not the matrix's end.
		doc["setup_error"] = true;
		return "cannot prepare kernel '" + g.kernel.name + "': " + e.what();
	}
}

void write_guest_job(const fs::path &guest_dir, const group_spec &g, const fs::path &modules)
{
	fs::create_directories(guest_dir);
	std::ofstream job(guest_dir / "job.env");
	job << guest_job_env(g, modules);
	if (!job)
		throw last_sys_error("write job.env");
}

std::vector<std::string> qemu_argv(const group_spec &g, const prepared_guest &p, const std::string &cmdline,
				   unsigned memory, const qmp_socket &qmp)
{
	// The uncompressed vmlinux (PVH entry) saves seconds of XZ unpacking in
	// an emulated guest; qboot and q35 start faster than SeaBIOS and i440FX.
	std::vector<std::string> argv = {
		// pdpe1gb: 1 GiB pages, without which hugetlb_cma= reserves nothing.
		// rdrand: the kernel seeds its crng at boot (RANDOM_TRUST_CPU, or
		// random.trust_cpu=on: guest_cmdline); without it the first
		// getrandom() waited ~1 s for entropy.
		"qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-cpu", "qemu64,+pdpe1gb,+rdrand",
		"-m", std::to_string(memory),
		"-smp", std::to_string(g.cpus), "-nodefaults", "-display", "none", "-no-reboot",
		"-serial", "file:" + (g.out / "serial.log").string(),
		"-pidfile", (g.out / "qemu.pid").string(),
		"-kernel", p.kernel.image.string(), "-initrd", p.initrd.string(),
		"-append", cmdline,
	};
	// The IOMMU before the PCI devices it translates for; edu: a device
	// with a DMA engine for vfio-pci (lib/vfio_type1_pin.hpp).
	if (needs_of(g).vfio_edu)
		argv.insert(argv.end(), {"-device", "intel-iommu,intremap=off", "-device", "edu"});
	argv.insert(argv.end(), {
		"-virtfs", "local,path=/,mount_tag=hostroot,readonly=on,security_model=none,multidevs=remap",
		"-virtfs", "local,path=" + (g.out / "guest").string() + ",mount_tag=results,security_model=none",
	});
	if (fs::exists(qboot))
		argv.insert(argv.begin() + 1, {"-bios", qboot});
	argv.insert(argv.end(), {"-qmp", qmp.qemu_arg()});
	if (g.ssh_port) {
		// Loopback only; restrict=on: the guest reaches nothing outside.
		const std::string fwd = "hostfwd=tcp:127.0.0.1:" + std::to_string(g.ssh_port) + "-:22";
		argv.insert(argv.end(), {"-netdev", "user,id=n0,restrict=on," + fwd, "-device",
					 "virtio-net-pci,netdev=n0"});
	}
	return argv;
}

struct qemu_run {
	std::optional<int> status;	// nullopt: killed at the timeout
	int signal = 0;			// killed by a signal not ours
	json wedged_dump;		// the guest's dumps at the timeout
	double wall_s = 0;
};

// QEMU until the guest powers off, or its timeout: then the guest's dumps
// (sysrq through QMP) before the kill, its results as they were at it.
// Meanwhile watch(), every half second, when given.
qemu_run boot_guest(const group_spec &g, const std::vector<std::string> &argv, const qmp_socket &qmp,
		    const std::function<void()> &watch)
{
	const fs::path guest_dir = g.out / "guest";
	qemu_run q;
	const auto t0 = std::chrono::steady_clock::now();
	std::optional<guest_report_at_timeout> at_timeout;
	{
		qemu_process qemu(argv, g.out / "qemu.log", g.out / "qemu.pid");
		q.status = qemu.wait_for(std::chrono::seconds(g.timeout_s), [&] {
			at_timeout.emplace(guest_dir);
			q.wedged_dump = dump_wedged_guest(qmp, g.out / "serial.log");
		}, watch);
		q.signal = qemu.killed_by();
	}
	if (at_timeout && at_timeout->restore())
		q.wedged_dump["note_results"] = "the guest reported more while its dumps were taken, after its "
						"timeout: not counted (results as at the timeout)";
	q.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	return q;
}

// The job's exit code: guest/exit_code, or (a full results disk can keep
// that file from being written) what stage2 said on the console.
std::optional<int> guest_job_exit(const fs::path &out)
{
	try {
		if (fs::exists(out / "guest" / "exit_code"))
			return std::stoi(read_text_file((out / "guest" / "exit_code").string()));
	} catch (const std::exception &) {
	}
	return console_job_exit(out / "serial.log");
}

// Why the guest ended early ("" when it did not).
std::string how_it_ended(const qemu_run &q, const std::optional<int> &job_status, int timeout_s)
{
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

json vm_record(const group_spec &g, const qemu_run &q, const std::vector<std::string> &argv,
	       const std::string &cmdline, unsigned memory, const std::optional<int> &job_status,
	       const std::string &ended)
{
	json vm = {{"accel", "tcg"},
		   {"memory_mib", memory},
		   {"cpus", g.cpus},
		   {"cmdline", cmdline},
		   {"qemu_argv", argv},
		   {"wall_s", q.wall_s},
		   {"qemu_exit", q.status ? json(*q.status) : json("killed")},
		   {"job_exit", job_status ? json(*job_status) : json(nullptr)},
		   {"ended", ended.empty() ? json(nullptr) : json(ended)},
		   {"serial_log", "serial.log"}};
	if (!q.wedged_dump.is_null())
		vm["wedged_guest_dump"] = q.wedged_dump;
	if (auto phases = guest_phases(g.out / "guest", q.wall_s); !phases.empty())
		vm["phases_s"] = phases;
	return vm;
}

// The guest runner's results.json into the group's record (its kernel
// facts added to the host's).
void merge_guest_results(json &doc, const fs::path &guest_dir, std::string &ended)
{
	const fs::path guest_results = guest_dir / "results.json";
	json guest;
	if (fs::exists(guest_results)) {
		try {
			guest = read_json(guest_results);
		} catch (const std::exception &e) {
			ended += std::string(ended.empty() ? "" : "; ") + "guest results unreadable: " + e.what();
		}
	}
	if (guest.is_object() && guest.value("schema", "") == results_schema) {
		for (auto &[key, value] : guest.items())
			if (key != "kernel")
				doc[key] = value;
		doc["kernel"].update(guest.value("kernel", json::object()));
	}
}

// The first kernel bug report on the guest's console: what the case that
// was running when a guest died or hung most likely met. Empty if none.
std::string first_console_alarm(const fs::path &serial)
{
	std::string text;
	try {
		text = read_text_file(serial.string());
	} catch (const std::exception &) {
		return "";
	}
	const auto alarms = kernel_alarms(text);
	return alarms.empty() ? "" : trimmed(alarms.front());
}

// A guest whose kernel ended before its job started: QEMU exited by itself
// and stage2 never marked guest/timeline.
bool died_before_its_job(const qemu_run &q, const fs::path &guest_dir)
{
	return q.status && *q.status == 0 && !q.signal && !fs::exists(guest_dir / "timeline");
}

struct booted_guest {
	qemu_run q;
	std::vector<std::string> argv;
	json retries = json::array();	// vm.boot_retries: the boots that died before the job
};

// Boots the guest, and once more when its kernel died before the job
// started: under TCG, stock 6.12 now and then oopses in early boot (an
// int3 Oops in sched_clock_cpu, seen in a fresh-clone CI run), before any
// case could run or see it. A kernel that always dies there
// dies again and the run is the error it was. The dead boot's console is
// kept (serial-boot-1.log) and named, with its first bug line, in
// vm.boot_retries.
booted_guest boot_until_its_job_starts(const group_spec &g, const prepared_guest &guest, const std::string &cmdline,
				       unsigned memory, const std::function<void()> &watch)
{
	constexpr int boots = 2;
	booted_guest b;
	for (int attempt = 1;; ++attempt) {
		const qmp_socket qmp;
		b.argv = qemu_argv(g, guest, cmdline, memory, qmp);
		b.q = boot_guest(g, b.argv, qmp, watch);
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

// Every planned case gets exactly one verdict: the missing ones are
// errors. The runner writes results.json as it starts and after each
// case, in plan order: when the guest died, the first case without a
// record was running, and its reason names the console's first kernel
// bug report. (A job that ended without them said why on the console: a
// results disk that filled up, say.)
void add_missing_records(json &doc, const group_spec &g, const std::string &ended,
			 const std::optional<int> &job_status, const std::string &excerpt)
{
	const std::string alarm = first_console_alarm(g.out / "serial.log");
	const auto suites = make_suites(group_suite_options(g));
	const bool guest_died = doc.contains("plan") && !doc.value("complete", false) && !job_status;
	bool first_missing = true;
	for (const auto &[owner, c] : group_plan(suites, g)) {
		bool reported = false;
		for (const auto &r : doc["cases"])
			reported |= r.value("id", "") == c.id;
		if (reported)
			continue;
		std::string why = ended.empty() ? "unknown" : ended;
		if (const auto line = unwritten_record_line(g.out / "serial.log", c.id); !line.empty())
			why = line;
		case_record r = owner->not_run(c, verdict::error,
					       "no result from the guest: " +
						       (!guest_died ? ""
							: first_missing ? "case " + c.id + " was running when the guest ended: "
									: "not reached: ") +
						       why);
		if (guest_died && first_missing && !alarm.empty())
			r.add_reason("the kernel reported a bug on the console: " + alarm);
		r.suite = owner->name();
		if (guest_died && !first_missing)
			r.details["not_reached"] = true;	// never started (KCIDB's MISS)
		if (first_missing && !excerpt.empty())
			r.details["serial_excerpt"] = excerpt;
		first_missing = false;
		doc["cases"].push_back(to_json(r));
	}
}

// Each case names where it ran, so merged results stay readable.
void label_cases(json &doc)
{
	for (auto &c : doc["cases"]) {
		c["kernel"] = {{"name", doc["kernel"].value("name", "")},
			       {"release", doc["kernel"].value("release", "")},
			       {"source", doc["kernel"].value("source", "")}};
		c["boot"] = doc["boot"];
	}
}

// What the caller of run_group() is shown while the guest runs: the
// group's record as it would be merged now (--format ktap streams its new
// cases).
using group_progress = std::function<void(const json &doc)>;

// A watch of the guest's results.json (rewritten whole after each case):
// each new version, merged into the group's record and labelled as
// run_single() and merge_group() do at the end, goes to progress(). None
// without a progress.
std::function<void()> watch_guest(const json &doc, const fs::path &guest_dir, const group_progress &progress)
{
	if (!progress)
		return {};
	return [&doc, guest_dir, &progress, seen = fs::file_time_type::min()]() mutable {
		std::error_code ec;
		const auto written = fs::last_write_time(guest_dir / "results.json", ec);
		if (ec || written == seen)
			return;
		seen = written;
		json now = doc;
		std::string unread;	// said at the end, if it still is
		merge_guest_results(now, guest_dir, unread);
		label_cases(now);
		progress(now);
	};
}

// Boots one guest (or finds that it cannot) and returns its results;
// progress(), when given, sees its record as it grows (watch_guest()).
group_outcome run_group(const group_spec &g, const group_progress &progress)
{
	group_outcome outcome;
	json &doc = outcome.doc;
	std::string &ended = outcome.ended;
	const fs::path guest_dir = g.out / "guest", serial = g.out / "serial.log";
	const std::string append = boot_append(g);
	const unsigned memory = g.memory_mib ? g.memory_mib : g.boot->memory_mib;
	doc = group_doc(g, append, memory);

	prepared_guest guest;
	const auto cannot = prepare_guest(g, doc, guest);
	// Only now is anything written: a setup error leaves nothing behind.
	if (!doc.contains("setup_error")) {
		fs::create_directories(g.out);
		fs::remove_all(guest_dir);
		fs::remove(g.out / "results.json");
		fs::remove(g.out / "serial-boot-1.log");
	}
	if (cannot) {
		ended = *cannot;
		doc["cases"] = records_not_run(g, verdict::skip, *cannot);
		doc["cannot_run"] = *cannot;
		return outcome;
	}
	write_guest_job(guest_dir, g, guest.modules);

	const std::string cmdline = guest_cmdline(guest.kernel.dir, g);
	std::ostringstream booting;
	booting << "pinmatrix vm: " << g.label << "booting " << guest.kernel.describe() << " (" << g.boot->name
		<< ": " << (append.empty() ? "no extra parameters" : append) << ", " << memory << " MiB, " << g.cpus
		<< (g.cpus == 1 ? " vCPU" : " vCPUs") << ", TCG)";
	say_line(booting.str());
	const booted_guest booted =
		boot_until_its_job_starts(g, guest, cmdline, memory, watch_guest(doc, guest_dir, progress));
	const qemu_run &q = booted.q;
	const auto job_status = guest_job_exit(g.out);
	ended = how_it_ended(q, job_status, g.timeout_s);
	if (!booted.retries.empty() && died_before_its_job(q, guest_dir))
		ended += "; its kernel ended before the job on both boots (serial-boot-1.log, serial.log)";
	outcome.kernel_alarms = note_guest_kernel_log(guest_dir, doc);
	json vm = vm_record(g, q, booted.argv, cmdline, memory, job_status, ended);
	if (!booted.retries.empty())
		vm["boot_retries"] = booted.retries;
	if (!g.guest_cmd.empty() || g.ssh_port) {
		outcome.guest_cmd_exit = ended.empty() ? job_status : std::nullopt;
		doc["vm"] = vm;
		if (!ended.empty())
			doc["vm"]["serial_excerpt"] = serial_excerpt(serial);
		return outcome;
	}

	merge_guest_results(doc, guest_dir, ended);
	if (!doc.value("complete", false) && ended.empty())
		ended = "the guest's run ended early (job exit " +
			(job_status ? std::to_string(*job_status) : std::string("none")) + ", see serial.log)";
	const std::string excerpt = ended.empty() ? "" : serial_excerpt(serial);
	add_missing_records(doc, g, ended, job_status, excerpt);
	if (g.bench)
		bench::collect(guest_dir, g.out, doc);
	doc["vm"] = vm;
	if (!ended.empty())
		doc["vm"]["serial_excerpt"] = excerpt;
	return outcome;
}

void summarize_into(json &doc)
{
	const auto summary = summarize_json(doc["cases"]);
	doc["summary"] = summary_json(summary);
	verdict v = summary.overall;
	if (!report::unexplained_kernel_alarms(doc).empty())
		v = worst(v, verdict::fail);
	doc["verdict"] = name(v);
}

// "  [3/36] C: PASS", "  [4/36] movable-mlock: SKIP - why": a case the
// guest finished, as the guest's own console says it; after the group's
// label while other guests run beside it.
void print_case_progress(size_t i, size_t total, const json &c, const std::string &label)
{
	std::string verdict = c.value("verdict", "error");
	for (auto &ch : verdict)
		ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
	const std::string reason = c.value("reason", "");
	say_line("  " + label + "[" + std::to_string(i + 1) + "/" + std::to_string(total) + "] " + c.value("id", "?") +
		 ": " + verdict + (reason.empty() ? "" : " - " + reason));
}

// What a person and a runner see while a guest runs (watch_guest()): each
// case's progress line as the guest's results.json gains it, and, with
// --format ktap, the KTAP document on stdout as it grows, then the cases
// the host's merge decides (those the guest never reached); with ktap the
// people's lines go to stderr. While guests run side by side (not live),
// a group's KTAP comes whole once it and the groups before it have ended.
class guest_ktap {
public:
	guest_ktap(const std::string &format, ktap_plan plan, bool live = true) : live_(live)
	{
		if (streams_ktap(format))
			console_.emplace(std::move(plan));
	}
	// total: the cases the group plans; label: before each line.
	group_progress progress(size_t total, const std::string &label = "")
	{
		return [this, total, label, shown = size_t(0)](const json &doc) mutable {
			const auto &cases = doc["cases"];
			for (; shown < cases.size(); shown++)
				print_case_progress(shown, total, cases[shown], label);
			if (console_ && live_)
				streamed_ += console_->stream().records(doc, streamed_);
		};
	}
	void header(const json &doc)
	{
		if (console_)
			console_->stream().header(doc);
	}
	// The group's cases not streamed yet, from its record as merged.
	void rest_of(const json &doc)
	{
		if (console_)
			console_->stream().records(doc, streamed_);
		streamed_ = 0;
	}
	void end_group(const json &entry)
	{
		if (console_)
			console_->stream().end_group(&entry);
	}
	void end(const json &doc)
	{
		if (console_)
			console_->stream().end(doc);
	}

private:
	std::optional<ktap_console> console_;
	bool live_;
	size_t streamed_ = 0;	// of the group's cases, in KTAP
};

size_t sum(const std::vector<size_t> &sizes)
{
	return std::accumulate(sizes.begin(), sizes.end(), size_t(0));
}

// The number of cases of each suite a group plans (its KTAP subtests).
std::vector<size_t> group_suite_sizes(const group_spec &g)
{
	const auto suites = make_suites(group_suite_options(g));
	return suite_sizes(group_plan(suites, g));
}

group_spec base_group(const vm_options &opt)
{
	group_spec g;
	g.timeout_s = opt.timeout_s;
	g.case_timeout_s = opt.case_timeout_s;
	g.strict = opt.strict;
	g.fault = opt.fault;
	g.guest_cmd = opt.guest_cmd;
	g.append = opt.append;
	g.memory_mib = opt.memory_mib;
	g.cpus = opt.cpus;
	g.cache = opt.cache;
	g.pins = opt.pins;
	g.ssh_port = opt.ssh_port;
	g.ssh_key = opt.ssh_key.empty() ? fs::path() : fs::absolute(opt.ssh_key);
	g.bench = opt.bench;
	g.bench_args = opt.bench_args;
	return g;
}

int run_single(const vm_options &opt)
{
	group_spec g = base_group(opt);
	g.kernel = parse_kernel_spec(opt.kernel);
	g.kernel.patches = opt.patches;
	if (!opt.patches.empty() && g.kernel.source != "build")
		throw usage_error("--patch applies to build kernels only");
	g.boot = &find_boot_placement(opt.boot);
	g.cases = opt.cases;
	g.out = fs::absolute(opt.out);
	check_group(g); // before anything is written

	const auto sizes = group_suite_sizes(g);
	guest_ktap ktap(opt.format, ktap_plan{false, {sizes}});
	const auto t0 = std::chrono::steady_clock::now();
	auto outcome = run_group(g, ktap.progress(sum(sizes)));
	const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	json &doc = outcome.doc;
	// One guest that cannot be prepared (no such kernel, no headers) is a
	// setup error; in a matrix it is that group's SKIP instead.
	if (doc.contains("setup_error")) {
		ktap.rest_of(doc);	// its cases' SKIPs, for a runner that reads no exit code
		ktap.end(doc);
		throw unmet_need(outcome.ended);
	}

	if (!g.guest_cmd.empty() || g.ssh_port) {
		const fs::path log = g.out / "guest" / "job.log";
		if (fs::exists(log))
			std::cout << read_text_file(log.string());
		if (!outcome.guest_cmd_exit) {
			std::cerr << "pinmatrix vm: ERROR: " << outcome.ended << "\n";
			if (doc.contains("vm"))
				std::cerr << doc["vm"].value("serial_excerpt", "");
			return doc.contains("cannot_run") ? 4 : 1;
		}
		std::printf("pinmatrix vm: guest command exit %d, %.1f s\n", *outcome.guest_cmd_exit, wall_s);
		return with_kernel_alarms(*outcome.guest_cmd_exit, outcome.kernel_alarms);
	}

	label_cases(doc);
	summarize_into(doc);
	ktap.rest_of(doc);
	ktap.end(doc);
	// A full disk: say so and what is kept; results.json is never half-written.
	std::string not_written;
	try {
		write_reports(g.out, doc, {{"results.json", results_json_text(doc)}});
	} catch (const std::exception &e) {
		not_written = e.what();
	}
	std::cout << '\n' << format_table_for_stdout(doc["cases"]);
	// No "vm" when the guest never booted (the kernel cannot run the boot).
	const json vm = doc.value("vm", json::object());
	if (doc.contains("cannot_run"))
		std::cout << "cannot run here: " << outcome.ended << "\n";
	else if (!outcome.ended.empty())
		std::cout << "guest: " << outcome.ended << "\n" << vm.value("serial_excerpt", "");
	std::printf("pinmatrix vm: %s in %.1f s (boot to verdict%s); results in %s\n",
		    doc["verdict"].get<std::string>().c_str(), wall_s,
		    phases_text(vm.value("phases_s", json::object())).c_str(),
		    not_written.empty() ? (g.out / "results.json").c_str() : "none (not written, see below)");
	const int rc = with_kernel_alarms(exit_code(summarize_json(doc["cases"])),
					  report::unexplained_kernel_alarms(doc));
	if (!not_written.empty()) {
		std::cerr << "pinmatrix vm: ERROR: results not written: " << not_written << "; "
			  << (fs::exists(g.out / "results.json") ? "results.json is an earlier, whole one"
								   : "there is no results.json")
			  << "; the guest's own results (as far as it could write them) are in "
			  << (g.out / "guest" / "results.json").string() << std::endl;
		return 1;
	}
	if (g.bench && !bench::print_summary(doc, std::cout))
		return rc ? rc : 1;
	return rc;
}

// "-pinmatrix_mutant=3" for a group's own command line, "" for none: its
// directory's name stays one word.
std::string dir_part(const std::string &append)
{
	std::string out = append.empty() ? "" : "-" + append;
	std::replace(out.begin(), out.end(), ' ', '_');
	return out;
}

// Every group of a matrix file, each checked before the first boots.
std::vector<group_spec> matrix_groups(const vm_options &opt)
{
	const auto def = load_matrix(opt.matrix);
	std::vector<group_spec> groups;
	for (const auto &mg : def.groups) {
		group_spec g = base_group(opt);
		g.kernel = parse_kernel_spec(mg.kernel.spec);
		g.kernel.name = mg.kernel.name;
		g.kernel.patches = mg.kernel.patches;
		g.boot = &find_boot_placement(mg.boot);
		g.cases = !opt.cases.empty() ? opt.cases : mg.cases;
		if (!mg.append.empty())
			g.append = g.append.empty() ? mg.append : g.append + " " + mg.append;
		if (mg.memory_mib)
			g.memory_mib = mg.memory_mib;
		g.out = fs::absolute(opt.out) / "groups" / (mg.kernel.name + "-" + mg.boot + dir_part(mg.append));
		try {
			check_group(g);
		} catch (const usage_error &e) {
			throw usage_error(opt.matrix.string() + ": kernel " + mg.kernel.name + ", placement " +
					  mg.boot + ": " + e.what());
		}
		groups.push_back(g);
	}
	return groups;
}

// One group's results written in its dir, and its line in the merged record.
void merge_group(const group_spec &g, group_outcome &outcome, const fs::path &out, json &merged)
{
	json &doc = outcome.doc;
	label_cases(doc);
	summarize_into(doc);
	fs::create_directories(g.out);	// a group refused before its boot has none yet
	write_reports(g.out, doc, {{"results.json", results_json_text(doc)}});
	json group = {{"kernel", doc["kernel"]},
		      {"boot", doc["boot"]},
		      {"dir", fs::relative(g.out, out).string()},
		      {"verdict", doc["verdict"]},
		      {"summary", doc["summary"]},
		      {"wall_s", doc.contains("vm") ? doc["vm"]["wall_s"] : json(0)},
		      {"ended", outcome.ended.empty() ? json(nullptr) : json(outcome.ended)}};
	if (doc.contains("vm") && doc["vm"].contains("serial_excerpt"))
		group["serial_excerpt"] = doc["vm"]["serial_excerpt"];
	if (!outcome.kernel_alarms.empty()) {
		group["kernel_alarms"] = outcome.kernel_alarms;
		for (const auto &a : outcome.kernel_alarms)
			merged["kernel_log"]["alarms"].push_back(group["dir"].get<std::string>() + ": " + a);
	}
	merged["groups"].push_back(group);
	for (const auto &c : doc["cases"])
		merged["cases"].push_back(c);
}

// Each group's table, then the matrix's line. The cases are sorted into
// their groups in one pass: linear in cases and groups.
void print_matrix(const json &merged, double wall_s, const fs::path &results)
{
	std::map<std::pair<std::string, std::string>, json> by_group;	// (kernel name, placement) -> cases
	for (const auto &c : merged["cases"]) {
		auto &cases = by_group[{c["kernel"].value("name", ""), c["boot"].value("placement", "")}];
		if (cases.is_null())
			cases = json::array();
		cases.push_back(c);
	}
	for (const auto &group : merged["groups"]) {
		std::cout << "\n== " << group["kernel"].value("name", "") << " (" << group["kernel"].value("release", "?")
			  << ") / " << group["boot"].value("placement", "") << ": " << group["verdict"].get<std::string>()
			  << "\n";
		const auto it = by_group.find({group["kernel"].value("name", ""), group["boot"].value("placement", "")});
		std::cout << format_table_for_stdout(it == by_group.end() ? json::array() : it->second);
	}
	std::printf("pinmatrix vm: matrix %s in %.1f s; results in %s\n", merged["verdict"].get<std::string>().c_str(),
		    wall_s, results.c_str());
}

// A matrix run: its groups, where it writes, what it has merged so far.
struct matrix_run {
	std::vector<group_spec> groups;
	std::vector<std::vector<size_t>> plan_sizes;	// per group, its suites' case counts
	fs::path out;
	json merged;
};

// "[group 3/8] debian-6.12 / movable": where the matrix is.
std::string group_line(const matrix_run &m, size_t k)
{
	return "[group " + std::to_string(k + 1) + "/" + std::to_string(m.groups.size()) + "] " +
	       m.groups[k].kernel.name + " / " + m.groups[k].boot->name;
}

// The merged results.json as groups end: after the 1st, 2nd, 4th, 8th ...
// group (each group's own results.json is written as it ends; the merged
// one whole at the matrix's end). Each write is the whole document, so
// writing after every group was quadratic in groups (200 groups that did
// not boot: 22.6 s of CPU); these writes add up to twice the end's.
void write_merged_so_far(matrix_run &m)
{
	if (!std::has_single_bit(m.merged["groups"].size()))
		return;
	summarize_into(m.merged);
	write_file_set(m.out, {{"results.json", results_json_text(m.merged)}});
}

// A group's end, in the matrix's order: merged, reported, said.
void finish_group(matrix_run &m, size_t k, group_outcome &outcome, guest_ktap &ktap)
{
	const auto &g = m.groups[k];
	merge_group(g, outcome, m.out, m.merged);
	ktap.rest_of(outcome.doc);
	ktap.end_group(m.merged["groups"].back());
	write_merged_so_far(m);
	say_line("  " + g.kernel.name + " / " + g.boot->name + ": " + outcome.doc["verdict"].get<std::string>() +
		 (outcome.ended.empty() ? "" : " (" + outcome.ended + ")"));
}

// One guest at a time: each case's KTAP as it ends.
void run_groups_one_at_a_time(matrix_run &m, guest_ktap &ktap)
{
	for (size_t k = 0; k < m.groups.size(); k++) {
		say_line("pinmatrix vm: " + group_line(m, k));
		auto outcome = run_group(m.groups[k], ktap.progress(sum(m.plan_sizes[k])));
		finish_group(m, k, outcome, ktap);
	}
}

// Up to `at_once` guests side by side, each group's lines after its label;
// merged, reported and streamed in the matrix's order.
void run_groups_side_by_side(matrix_run &m, guest_ktap &ktap, unsigned at_once)
{
	std::vector<group_progress> progress;
	for (size_t k = 0; k < m.groups.size(); k++) {
		m.groups[k].label = "[" + m.groups[k].kernel.name + " / " + m.groups[k].boot->name + "] ";
		progress.push_back(ktap.progress(sum(m.plan_sizes[k]), m.groups[k].label));
	}
	run_in_order<group_outcome>(
		m.groups.size(), at_once, [&](size_t k) { say_line("pinmatrix vm: " + group_line(m, k)); },
		[&](size_t k) { return run_group(m.groups[k], progress[k]); },
		[&](size_t k, group_outcome &outcome) { finish_group(m, k, outcome, ktap); });
}

// Guests at once for this matrix: --jobs, else what the host holds (why).
unsigned matrix_guests_at_once(const vm_options &opt, const std::vector<group_spec> &groups, std::string &why)
{
	std::vector<unsigned> memory, cpus;
	for (const auto &g : groups) {
		memory.push_back(g.memory_mib ? g.memory_mib : g.boot->memory_mib);
		cpus.push_back(g.cpus);
	}
	return guests_at_once(opt.jobs, memory, cpus, this_host(), why);
}

int run_matrix_file(const vm_options &opt)
{
	matrix_run m;
	m.groups = matrix_groups(opt);
	m.out = fs::absolute(opt.out);
	fs::create_directories(m.out);
	fs::remove(m.out / "results.json");
	m.merged = {{"schema", results_schema},
		    {"matrix", fs::absolute(opt.matrix).string()},
		    {"groups", json::array()},
		    {"cases", json::array()}};
	ktap_plan plan{true, {}};
	for (const auto &g : m.groups)
		plan.groups.push_back(group_suite_sizes(g));
	m.plan_sizes = plan.groups;
	std::string why;
	const unsigned at_once = matrix_guests_at_once(opt, m.groups, why);
	guest_ktap ktap(opt.format, std::move(plan), at_once == 1);
	ktap.header(m.merged);
	say_line("pinmatrix vm: " + std::to_string(m.groups.size()) + " groups, " + std::to_string(at_once) +
		 (at_once == 1 ? " guest" : " guests") + " at a time (" + why + ")");
	const auto t0 = std::chrono::steady_clock::now();
	if (at_once == 1)
		run_groups_one_at_a_time(m, ktap);
	else
		run_groups_side_by_side(m, ktap, at_once);
	const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	m.merged["wall_s"] = wall_s;
	m.merged["guests_at_once"] = at_once;
	summarize_into(m.merged);
	ktap.end(m.merged);
	write_reports(m.out, m.merged, {{"results.json", results_json_text(m.merged)}});
	print_matrix(m.merged, wall_s, m.out / "results.json");
	return with_kernel_alarms(exit_code(summarize_json(m.merged["cases"])), report::unexplained_kernel_alarms(m.merged));
}

} // namespace

int run_vm(const vm_options &opt)
{
	// Everything that can be wrong with the arguments is found before
	// anything is written.
	if (streams_ktap(opt.format) && (!opt.guest_cmd.empty() || opt.ssh_port))
		throw usage_error("--format ktap reports cases: it excludes --guest-cmd and --ssh-port");
	if (opt.out.empty())
		throw usage_error("--out is required");
	require_writable_dir(opt.out, "--out");
	require_writable_dir(opt.cache, "--cache");
	parse_fault(opt.fault);
	if (!opt.guest_cmd.empty() && (!opt.cases.empty() || !opt.fault.empty() || !opt.matrix.empty()))
		throw usage_error("--guest-cmd excludes --cases, --fault and --matrix");
	if (opt.append.find_first_of("\"'\n") != std::string::npos)
		throw usage_error("--append must not contain quotes or newlines");
	check(opt.pins);
	if (opt.ssh_port && (opt.ssh_key.empty() || !opt.matrix.empty() || !opt.cases.empty() || !opt.fault.empty()))
		throw usage_error("--ssh-port needs --ssh-key and excludes --matrix, --cases and --fault");
	// An option whose partner is missing would be ignored in silence.
	if (!opt.ssh_key.empty() && !opt.ssh_port)
		throw usage_error("--ssh-key goes with --ssh-port");
	if (!opt.bench_args.empty() && !opt.bench)
		throw usage_error("--bench-args goes with --bench");
	if (opt.bench && (!opt.guest_cmd.empty() || !opt.matrix.empty() || opt.ssh_port))
		throw usage_error("--bench excludes --guest-cmd, --matrix and --ssh-port");
	if (opt.jobs && opt.matrix.empty())
		throw usage_error("--jobs goes with --matrix (guests at once)");
	if (opt.bench)
		bench::bench_binary(); // there, before anything is written
	return opt.matrix.empty() ? run_single(opt) : run_matrix_file(opt);
}

int build_kernel(const std::string &spec_text, const std::vector<fs::path> &patches, const fs::path &cache)
{
	kernel_spec spec = parse_kernel_spec(spec_text);
	if (!patches.empty() && spec.source != "build")
		throw usage_error("--patch applies to build kernels only");
	spec.patches = patches;
	require_writable_dir(cache, "--cache");
	cache_entry_lock lock(cache, kernel_lock_name(spec), "kernel '" + spec.name + "'", std::cerr);
	const auto k = prepare_kernel(spec, cache);
	std::cout << k.dir.string() << "\n";
	return 0;
}

} // namespace pinmatrix
