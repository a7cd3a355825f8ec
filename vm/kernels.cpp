// SPDX-License-Identifier: GPL-2.0
#include "kernels.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <regex>

#include "boot.hpp"
#include "kernel_info.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

const fs::path source_dir = PINMATRIX_SOURCE_DIR;


std::string trimmed(std::string s)
{
	while (!s.empty() && isspace(static_cast<unsigned char>(s.back())))
		s.pop_back();
	return s;
}

std::vector<std::string> split(const std::string &text, char sep)
{
	std::vector<std::string> parts;
	size_t from = 0;
	for (size_t at; (at = text.find(sep, from)) != std::string::npos; from = at + 1)
		parts.push_back(text.substr(from, at - from));
	parts.push_back(text.substr(from));
	return parts;
}

std::string content_hash(const std::string &text)
{
	char hash[32];
	std::snprintf(hash, sizeof(hash), "%016zx", std::hash<std::string>{}(text));
	return hash;
}

// What every guest needs of its kernel, built in or as a module: the
// initramfs, the host root and the results over 9p on virtio-pci, and
// Soft-RoCE for the second pin. A kernel lacking any is refused before a
// boot, with every missing option named.
struct guest_need {
	const char *option;
	const char *why;
};
const guest_need guest_needs[] = {
	{"CONFIG_BLK_DEV_INITRD", "the initramfs"},
	{"CONFIG_DEVTMPFS", "/dev in the initramfs"},
	{"CONFIG_TMPFS", "the guest's writable /run and /tmp"},
	{"CONFIG_VIRTIO_PCI", "QEMU's virtio devices"},
	{"CONFIG_NET_9P_VIRTIO", "the host root and the results over 9p"},
	{"CONFIG_9P_FS", "the host root and the results over 9p"},
	{"CONFIG_RDMA_RXE", "Soft-RoCE (rxe0) for ibv_reg_mr"},
	{"CONFIG_INFINIBAND_USER_ACCESS", "libibverbs (/dev/infiniband/uverbs*)"},
};

void check_guest_needs(const guest_kernel &k)
{
	std::string missing;
	for (const auto &n : guest_needs) {
		const std::string v = kconfig_value(k.config, n.option);
		if (v != "y" && v != "m")
			missing += std::string(missing.empty() ? "" : "; ") + n.option + " (" + n.why + ")";
	}
	if (!missing.empty())
		throw unmet_need("kernel '" + k.spec.name + "' (" + k.release +
				 ") lacks what the guest needs, as =y or =m: " + missing);
}

} // namespace

const std::vector<named_build> &named_builds()
{
	static const std::vector<named_build> table = {
		{"", {"pinmatrix.config"}, "the suite's kernel: CMA, hugetlb, rxe, 9p, kprobes, DRM"},
		{"debug", {"pinmatrix.config", "debug.config"},
		 "the suite's kernel with KASAN, lockdep, DEBUG_VM and DEBUG_ATOMIC_SLEEP"},
	};
	return table;
}

void exec_or_die(const std::vector<std::string> &argv)
{
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	execvp(args[0], args.data());
	_exit(127);
}

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
	return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), trimmed(out)};
}

kernel_spec parse_kernel_spec(const std::string &text)
{
	kernel_spec k;
	k.name = text;
	const auto colon = text.find(':');
	k.source = text.substr(0, colon);
	const std::string arg = colon == std::string::npos ? "" : text.substr(colon + 1);
	// build@SERIES: Debian's linux-source-SERIES (6.1 when not given).
	if (k.source.rfind("build@", 0) == 0) {
		k.series = k.source.substr(6);
		k.source = "build";
		if (!std::regex_match(k.series, std::regex("[0-9]+\\.[0-9]+")))
			throw usage_error("kernel '" + text + "': build@SERIES needs a kernel series such as 6.12");
	}
	if (k.source == "debian") {
		k.abi = arg.empty() ? PINMATRIX_DEFAULT_KERNEL : arg;
		if (!std::regex_match(k.abi, std::regex("[0-9][0-9a-z.+~-]*")))
			throw usage_error("kernel '" + text + "': not a Debian kernel ABI name");
	} else if (k.source == "build") {
		std::string names;
		for (const auto &b : named_builds()) {
			if (arg == b.name)
				for (const char *f : b.fragments)
					k.fragments.push_back(source_dir / "vm/kconfig" / f);
			if (*b.name)
				names += std::string(names.empty() ? "" : ", ") + b.name;
		}
		// Not a name: fragment files, '+' between them, merged in order
		// (one file whose path holds a '+' is taken whole).
		if (k.fragments.empty()) {
			const auto files = fs::is_regular_file(arg) ? std::vector<std::string>{arg} : split(arg, '+');
			for (const auto &f : files) {
				if (f.empty() || !fs::is_regular_file(f))
					throw usage_error("kernel '" + text + "': " +
							  (f.empty() ? std::string("an empty fragment name")
								     : "no Kconfig fragment at " + f) +
							  " (expected build, build:NAME with NAME one of: " + names +
							  ", or build:FRAGMENT[+FRAGMENT...])");
				k.fragments.push_back(f);
			}
		}
	} else if (k.source == "image") {
		k.image_dir = arg;
		std::string missing;
		for (const char *f : {"release", "config", "modules", "build"})
			if (!fs::exists(k.image_dir / f))
				missing += std::string(missing.empty() ? "" : ", ") + f;
		if (!fs::exists(k.image_dir / "vmlinux") && !fs::exists(k.image_dir / "vmlinuz"))
			missing += std::string(missing.empty() ? "" : ", ") + "vmlinux or vmlinuz";
		if (arg.empty() || !missing.empty())
			throw usage_error("kernel '" + text + "': an image dir needs " +
					  (missing.empty() ? std::string("a path") : missing));
	} else {
		throw usage_error("kernel '" + text +
				  "': expected debian[:ABI], build[@SERIES][:NAME|FRAGMENT[+FRAGMENT...]] or image:DIR");
	}
	return k;
}

std::string guest_kernel::describe() const
{
	std::string d = spec.source + " " + release;
	if (!spec.patches.empty())
		d += " (+" + std::to_string(spec.patches.size()) + " patches)";
	return d;
}

guest_kernel prepare_kernel(const kernel_spec &spec, const fs::path &cache)
{
	guest_kernel k;
	k.spec = spec;
	if (spec.source == "image") {
		k.dir = fs::absolute(spec.image_dir);
	} else {
		std::vector<std::string> argv;
		if (spec.source == "debian") {
			argv = {(source_dir / "vm/kernel-debian.sh").string(), spec.abi, cache.string()};
		} else {
			argv = {(source_dir / "vm/kernel-build.sh").string()};
			if (!spec.series.empty())
				argv.insert(argv.end(), {"--series", spec.series});
			for (const auto &p : spec.patches) {
				if (!fs::is_regular_file(p))
					throw usage_error("patch " + p.string() + " not found");
				argv.insert(argv.end(), {"--patch", fs::absolute(p).string()});
			}
			for (const auto &f : spec.fragments)
				argv.push_back(fs::absolute(f).string());
			argv.push_back(cache.string());
		}
		auto [rc, dir] = run_capture(argv);
		if (rc)
			throw unmet_need("cannot get kernel '" + spec.name + "' (" +
					 fs::path(argv[0]).filename().string() + " exit " + std::to_string(rc) + ")");
		k.dir = dir;
	}
	k.release = trimmed(read_text_file((k.dir / "release").string()));
	k.config = read_text_file((k.dir / "config").string());
	// PVH (the ELF vmlinux) skips decompression, but 6.1's PVH entry calls
	// xen_prepare_pvh(), which KASAN instruments, before KASAN's shadow is
	// mapped: a KASAN kernel triple-faults there, so it boots its bzImage.
	const bool pvh_breaks = kconfig_value(k.config, "CONFIG_KASAN") == "y" && fs::exists(k.dir / "vmlinuz");
	k.image = fs::exists(k.dir / "vmlinux") && !pvh_breaks ? k.dir / "vmlinux" : k.dir / "vmlinuz";
	// Debian kernels name their extracted headers (kdir) and, when the host
	// cannot build against them, a root of their own suite (buildroot/)
	// that holds the same headers at /usr/src/linux-headers-<ABI>.
	if (fs::exists(k.dir / "kdir"))
		k.kdir = trimmed(read_text_file((k.dir / "kdir").string()));
	else
		k.kdir = k.dir / "build";
	if (fs::is_directory(k.dir / "buildroot")) {
		k.build_root = k.dir / "buildroot";
		k.kdir = "/usr/src" / k.kdir.filename();
	}
	if (k.release.empty())
		throw unmet_need("kernel '" + spec.name + "': no release in " + k.dir.string());
	check_guest_needs(k);
	return k;
}

fs::path prepare_modules(const guest_kernel &k, const fs::path &cache)
{
	const fs::path makefile = k.build_root.string() + (k.kdir / "Makefile").string();
	if (!fs::exists(makefile))
		throw unmet_need("no build tree for " + k.release + " at " + makefile.parent_path().string());
	// Keyed by every file of kmod/ (sources, Kbuild, feature tests) and the
	// build script: a change to any of them rebuilds.
	std::string sources = read_text_file((source_dir / "vm/build-modules.sh").string());
	for (const auto &e : fs::recursive_directory_iterator(source_dir / "kmod"))
		if (e.is_regular_file())
			sources += e.path().string() + read_text_file(e.path().string());
	const fs::path out = cache / "modules" / (k.dir.filename().string() + "-" + content_hash(sources));
	if (fs::exists(out / ".complete"))
		return out;
	std::vector<std::string> argv = {(source_dir / "vm/build-modules.sh").string()};
	if (!k.build_root.empty())
		argv.insert(argv.end(), {"--root", k.build_root.string()});
	argv.insert(argv.end(), {k.kdir.string(), out.string()});
	auto [rc, ignored] = run_capture(argv);
	if (rc)
		throw unmet_need("the test modules do not build against " + k.release +
				 " (vm/build-modules.sh exit " + std::to_string(rc) + ")");
	unique_fd done(::open((out / ".complete").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	return out;
}

fs::path prepare_initramfs(const guest_kernel &k, const fs::path &cache)
{
	// Keyed by what goes into it, so an edited init script rebuilds it.
	const std::string key = read_text_file((source_dir / "vm/guest/init").string()) +
				read_text_file((source_dir / "vm/mkinitramfs.sh").string()) +
				k.dir.string() + k.release;
	fs::path out = cache / "initramfs" / (k.release + "-" + content_hash(key) + ".cpio.gz");
	if (fs::exists(out))
		return out;
	fs::create_directories(out.parent_path());
	auto [rc, ignored] = run_capture({(source_dir / "vm/mkinitramfs.sh").string(), k.dir.string(),
					  out.string()});
	if (rc)
		throw unmet_need("cannot build the initramfs for " + k.release +
				 " (vm/mkinitramfs.sh exit " + std::to_string(rc) + ")");
	return out;
}

} // namespace pinmatrix
