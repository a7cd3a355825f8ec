// SPDX-License-Identifier: GPL-2.0
#include "launcher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "kernel_info.hpp"
#include "plan.hpp"
#include "results.hpp"
#include "runner.hpp"
#include "suite.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path source_dir = PINMATRIX_SOURCE_DIR;
const char *const qboot = "/usr/share/qemu/qboot.rom";

std::string shell_quote(const std::string &s)
{
	std::string q = "'";
	for (char c : s)
		q += c == '\'' ? std::string("'\\''") : std::string(1, c);
	return q + "'";
}

// In a forked child: becomes argv[0], or exits 127 (as a shell would).
[[noreturn]] void exec_or_die(const std::vector<std::string> &argv)
{
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	execvp(args[0], args.data());
	_exit(127);
}

// Runs argv, returns (exit status, stdout); stderr passes through (progress).
std::pair<int, std::string> run_capture(const std::vector<std::string> &argv)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC))
		throw last_sys_error("pipe2");
	unique_fd rd(pipefd[0]), wr(pipefd[1]);
	pid_t pid = fork();
	if (pid < 0)
		throw last_sys_error("fork");
	if (pid == 0) {
		dup2(wr.get(), STDOUT_FILENO);
		exec_or_die(argv);
	}
	wr.reset();
	std::string out;
	char buf[4096];
	ssize_t n;
	while ((n = read(rd.get(), buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			out.append(buf, size_t(n));
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	while (!out.empty() && out.back() == '\n')
		out.pop_back();
	return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

std::string self_exe()
{
	return fs::read_symlink("/proc/self/exe").string();
}

struct guest_kernel {
	fs::path dir;		// vmlinuz, release, config, modules/
	std::string release;
};

// Serialises preparation of the shared cache between concurrent runs.
class cache_lock {
public:
	explicit cache_lock(const fs::path &cache)
	{
		fs::create_directories(cache);
		fd_.reset(::open((cache / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
		if (!fd_ || flock(fd_.get(), LOCK_EX))
			throw last_sys_error("lock " + (cache / ".lock").string());
	}

private:
	unique_fd fd_;
};

guest_kernel prepare_kernel(const vm_options &opt)
{
	const std::string prefix = "debian:";
	if (opt.kernel.rfind(prefix, 0) != 0 || opt.kernel.size() == prefix.size())
		throw usage_error("--kernel '" + opt.kernel + "': expected debian:<ABI>, e.g. debian:" +
				  PINMATRIX_DEFAULT_KERNEL);
	const std::string abi = opt.kernel.substr(prefix.size());
	if (!std::regex_match(abi, std::regex("[0-9][0-9a-z.+~-]*")))
		throw usage_error("--kernel '" + opt.kernel + "': not a Debian kernel ABI name");
	auto [rc, dir] = run_capture({(source_dir / "vm/kernel-debian.sh").string(), abi,
				      opt.cache.string()});
	if (rc)
		throw unmet_need("cannot get Debian kernel " + abi + " (vm/kernel-debian.sh exit " +
				 std::to_string(rc) + ")");
	guest_kernel k;
	k.dir = dir;
	k.release = read_text_file((k.dir / "release").string());
	while (!k.release.empty() && isspace(static_cast<unsigned char>(k.release.back())))
		k.release.pop_back();
	return k;
}

fs::path prepare_initramfs(const vm_options &opt, const guest_kernel &k)
{
	// Keyed by what goes into it, so an edited init script rebuilds it.
	const std::string key = read_text_file((source_dir / "vm/guest/init").string()) +
				read_text_file((source_dir / "vm/mkinitramfs.sh").string()) + k.release;
	char hash[32];
	std::snprintf(hash, sizeof(hash), "%016zx", std::hash<std::string>{}(key));
	fs::path out = opt.cache / "initramfs" / (k.release + "-" + hash + ".cpio.gz");
	if (fs::exists(out))
		return out;
	fs::create_directories(out.parent_path());
	auto [rc, ignored] = run_capture({(source_dir / "vm/mkinitramfs.sh").string(),
					  k.dir.string(), out.string()});
	if (rc)
		throw unmet_need("cannot build the initramfs (vm/mkinitramfs.sh exit " +
				 std::to_string(rc) + ")");
	return out;
}

void check_module(const fs::path &ko, const std::string &release)
{
	if (!fs::exists(ko))
		throw usage_error("module " + ko.string() + " not found: build it (cmake --build build)");
	auto [rc, vermagic] = run_capture({"modinfo", "-F", "vermagic", ko.string()});
	if (rc || vermagic.substr(0, vermagic.find(' ')) != release)
		throw usage_error("module " + ko.string() + " is built for '" + vermagic +
				  "', the guest runs " + release +
				  ": configure with -DPINMATRIX_KERNEL_RELEASE=" + release);
}

std::string guest_job(const vm_options &opt)
{
	std::ostringstream job;
	job << "# Written by pinmatrix vm; run by vm/guest/stage2 inside the guest.\n"
	    // Soft-RoCE on a dummy netdev: loopback traffic never leaves rxe0.
	    << "if modprobe rdma_rxe && modprobe dummy numdummies=0 &&\n"
	    << "   ip link add pm0 type dummy && ip link set pm0 up &&\n"
	    << "   rdma link add rxe0 type rxe netdev pm0; then\n"
	    << "  echo 'pinmatrix-job: rxe0 on pm0 ready'\n"
	    << "else\n"
	    << "  echo 'pinmatrix-job: could not create rxe0: cases needing it will SKIP'\n"
	    << "fi\n";
	if (!opt.guest_cmd.empty()) {
		job << "export PINMATRIX_MODULE=" << shell_quote(opt.module.string()) << "\n"
		    << opt.guest_cmd << "\n";
		return job.str();
	}
	job << "exec " << shell_quote(self_exe()) << " run --out /run/pinmatrix --device rxe0 --module "
	    << shell_quote(opt.module.string());
	if (!opt.cases.empty()) {
		std::string list;
		for (const auto &c : opt.cases)
			list += (list.empty() ? "" : ",") + c;
		job << " --cases " << shell_quote(list);
	}
	if (!opt.fault.empty())
		job << " --fault " << shell_quote(opt.fault);
	job << " --case-timeout " << opt.case_timeout_s;
	job << "\n";
	return job.str();
}

// QEMU, started by us and killed only by its PID.
class qemu_process {
public:
	qemu_process(const std::vector<std::string> &argv, const fs::path &log)
	{
		unique_fd logfd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
		if (!logfd)
			throw last_sys_error("open " + log.string());
		pid_ = fork();
		if (pid_ < 0)
			throw last_sys_error("fork");
		if (pid_ == 0) {
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
	}

	// Exit status, or nullopt when it was still running at the deadline
	// (then it has been killed).
	std::optional<int> wait_for(std::chrono::seconds limit)
	{
		const auto deadline = std::chrono::steady_clock::now() + limit;
		for (;;) {
			int status = 0;
			pid_t r = waitpid(pid_, &status, WNOHANG);
			if (r == pid_) {
				pid_ = -1;
				return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			}
			if (r < 0 && errno != EINTR)
				throw last_sys_error("waitpid qemu");
			if (std::chrono::steady_clock::now() > deadline) {
				kill(pid_, SIGKILL);
				waitpid(pid_, nullptr, 0);
				pid_ = -1;
				return std::nullopt;
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		}
	}

private:
	pid_t pid_ = -1;
};

// The lines of the serial log that explain a dead guest.
std::string serial_excerpt(const fs::path &serial)
{
	std::ifstream in(serial);
	std::vector<std::string> lines;
	for (std::string l; std::getline(in, l);)
		lines.push_back(l);
	static const std::regex alarm(
		"Kernel panic|BUG:|Oops|WARNING:|Call Trace|pinmatrix-init: ERROR|hung_task|blocked for more than");
	std::string out;
	int taken = 0;
	for (size_t i = 0; i < lines.size() && taken < 40; i++)
		if (std::regex_search(lines[i], alarm)) {
			out += lines[i] + "\n";
			taken++;
		}
	if (!out.empty())
		return out;
	for (size_t i = lines.size() > 15 ? lines.size() - 15 : 0; i < lines.size(); i++)
		out += lines[i] + "\n";
	return out;
}

} // namespace

int run_vm(const vm_options &opt)
{
	// Everything that can be wrong with the arguments is found before
	// anything is written.
	if (opt.out.empty())
		throw usage_error("--out is required");
	const auto suites = make_suites({});
	const auto plan = select_plan(suites, opt.cases);
	parse_fault(opt.fault);
	if (!opt.guest_cmd.empty() && (!opt.cases.empty() || !opt.fault.empty()))
		throw usage_error("--guest-cmd excludes --cases and --fault");
	if (opt.append.find_first_of("\"'\n") != std::string::npos)
		throw usage_error("--append must not contain quotes or newlines");

	guest_kernel kernel;
	fs::path initrd;
	{
		cache_lock lock(opt.cache);
		kernel = prepare_kernel(opt);
		initrd = prepare_initramfs(opt, kernel);
	}
	check_module(opt.module, kernel.release);

	const fs::path out = fs::absolute(opt.out);
	const fs::path guest_dir = out / "guest";
	fs::create_directories(out);
	fs::remove_all(guest_dir);
	fs::remove(out / "results.json");
	fs::create_directories(guest_dir);
	{
		std::ofstream job(guest_dir / "job.sh");
		job << guest_job(opt);
		if (!job)
			throw last_sys_error("write job.sh");
	}

	// cryptomgr.notests: the crypto self-tests cost ~0.4 s of a TCG boot.
	const std::string cmdline = "console=ttyS0 panic=-1 quiet cryptomgr.notests pinmatrix.kdir=" +
				    kernel.dir.string() + " pinmatrix.stage2=" +
				    (source_dir / "vm/guest/stage2").string() + " " + opt.append;
	// The uncompressed vmlinux (PVH entry) saves seconds of XZ unpacking in
	// an emulated guest; qboot and q35 start faster than SeaBIOS and i440FX.
	const fs::path image = fs::exists(kernel.dir / "vmlinux") ? kernel.dir / "vmlinux"
								   : kernel.dir / "vmlinuz";
	std::vector<std::string> argv = {
		"qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-m", std::to_string(opt.memory_mib),
		"-smp", "1", "-nodefaults", "-display", "none", "-no-reboot",
		"-serial", "file:" + (out / "serial.log").string(),
		"-kernel", image.string(), "-initrd", initrd.string(),
		"-append", cmdline,
		"-virtfs", "local,path=/,mount_tag=hostroot,readonly=on,security_model=none,multidevs=remap",
		"-virtfs", "local,path=" + guest_dir.string() + ",mount_tag=results,security_model=none",
	};
	if (fs::exists(qboot)) {
		argv.insert(argv.begin() + 1, {"-bios", qboot});
	}

	std::cout << "pinmatrix vm: booting " << kernel.release << " (" << opt.append << ", "
		  << opt.memory_mib << " MiB, TCG)" << std::endl;
	const auto t0 = std::chrono::steady_clock::now();
	std::optional<int> qemu_status;
	{
		qemu_process qemu(argv, out / "qemu.log");
		qemu_status = qemu.wait_for(std::chrono::seconds(opt.timeout_s));
	}
	const double wall_s =
		std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

	std::optional<int> job_status;
	if (fs::exists(guest_dir / "exit_code"))
		job_status = std::stoi(read_text_file((guest_dir / "exit_code").string()));

	std::string ended;
	if (!qemu_status)
		ended = "guest still running after " + std::to_string(opt.timeout_s) + " s: killed";
	else if (*qemu_status)
		ended = "QEMU exited with status " + std::to_string(*qemu_status) + " (see qemu.log)";
	else if (!job_status)
		ended = "guest stopped before the job finished (panic or reset?)";

	if (!opt.guest_cmd.empty()) {
		std::cout << read_text_file((guest_dir / "job.log").string());
		std::printf("pinmatrix vm: guest command exit %s, %.1f s\n",
			    job_status ? std::to_string(*job_status).c_str() : "none", wall_s);
		if (!ended.empty()) {
			std::cerr << "pinmatrix vm: ERROR: " << ended << "\n"
				  << serial_excerpt(out / "serial.log");
			return 1;
		}
		return *job_status;
	}

	json doc;
	const fs::path guest_results = guest_dir / "results.json";
	if (fs::exists(guest_results)) {
		try {
			doc = read_json(guest_results);
		} catch (const std::exception &e) {
			ended += std::string(ended.empty() ? "" : "; ") + "guest results unreadable: " + e.what();
		}
	}
	if (!doc.is_object() || doc.value("schema", "") != results_schema)
		doc = {{"schema", results_schema}, {"cases", json::array()}, {"complete", false}};
	if (!doc.value("complete", false) && ended.empty())
		ended = "the guest's run ended early (job exit " +
			(job_status ? std::to_string(*job_status) : std::string("none")) + ", see serial.log)";

	const std::string excerpt = serial_excerpt(out / "serial.log");
	// Every planned case gets exactly one verdict: the missing ones are errors.
	for (const auto &[owner, c] : plan) {
		bool reported = false;
		for (const auto &r : doc["cases"])
			reported |= r.value("id", "") == c.id;
		if (reported)
			continue;
		json r = owner->not_run(c, verdict::error,
					"no result from the guest: " + (ended.empty() ? "unknown" : ended));
		r["suite"] = owner->name();
		doc["cases"].push_back(r);
	}
	const auto summary = summarize_json(doc["cases"]);
	doc["summary"] = {{"pass", summary.pass}, {"fail", summary.fail},
			  {"skip", summary.skip}, {"error", summary.error}};
	doc["verdict"] = name(summary.overall);
	doc["kernel"]["release"] = kernel.release;
	doc["kernel"]["source"] = opt.kernel;
	doc["vm"] = {{"accel", "tcg"},
		     {"memory_mib", opt.memory_mib},
		     {"append", opt.append},
		     {"cmdline", cmdline},
		     {"qemu_argv", argv},
		     {"wall_s", wall_s},
		     {"qemu_exit", qemu_status ? json(*qemu_status) : json("killed")},
		     {"job_exit", job_status ? json(*job_status) : json(nullptr)},
		     {"ended", ended.empty() ? json(nullptr) : json(ended)},
		     {"serial_log", "serial.log"}};
	if (!ended.empty())
		doc["vm"]["serial_excerpt"] = excerpt;
	write_json_atomically(out / "results.json", doc);

	std::cout << '\n' << format_table(doc["cases"]);
	if (!ended.empty())
		std::cout << "guest: " << ended << "\n" << excerpt;
	std::printf("pinmatrix vm: %s in %.1f s (boot to verdict); results in %s\n",
		    doc["verdict"].get<std::string>().c_str(), wall_s, (out / "results.json").c_str());
	return exit_code(summary);
}

} // namespace pinmatrix
