// SPDX-License-Identifier: GPL-2.0
#include "kernels.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "boot.hpp"
#include "build_info.hpp"
#include "build_tools.hpp"
#include "data_dir.hpp"
#include "kernel_info.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "unique_fd.hpp"
#include "user_input.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {



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
// initramfs and virtio-pci; and a way to the host root and the results,
// 9p where the kernel has it, else virtiofs (share_transport). Soft-RoCE
// is not a need: without it the long-term pin is io_uring's
// (vm/launcher.cpp: fit_to_kernel). A kernel lacking any is refused
// before a boot, with every missing option named.
struct kconfig_need {
	const char *option;
	const char *why;
};
const kconfig_need guest_kconfig_needs[] = {
	{"CONFIG_BLK_DEV_INITRD", "the initramfs"},
	{"CONFIG_DEVTMPFS", "/dev in the initramfs"},
	{"CONFIG_TMPFS", "the guest's writable /run and /tmp"},
	{"CONFIG_VIRTIO_PCI", "QEMU's virtio devices"},
};
const kconfig_need nine_p_needs[] = {
	{"CONFIG_NET_9P_VIRTIO", "the host root and the results over 9p"},
	{"CONFIG_9P_FS", "the host root and the results over 9p"},
};
const kconfig_need virtiofs_needs[] = {
	{"CONFIG_FUSE_FS", "the host root and the results over virtiofs"},
	{"CONFIG_VIRTIO_FS", "the host root and the results over virtiofs"},
};

// "CONFIG_X (why); ..." for each of NEEDS that CONFIG has neither =y nor =m.
template <size_t n> std::string lacking(const std::string &config, const kconfig_need (&needs)[n])
{
	std::string missing;
	for (const auto &need : needs) {
		const std::string v = kconfig_value(config, need.option);
		if (v != "y" && v != "m")
			missing += std::string(missing.empty() ? "" : "; ") + need.option + " (" + need.why + ")";
	}
	return missing;
}

share_transport check_guest_needs(const guest_kernel &k)
{
	std::string missing = lacking(k.config, guest_kconfig_needs);
	const std::string no_9p = lacking(k.config, nine_p_needs), no_virtiofs = lacking(k.config, virtiofs_needs);
	if (!no_9p.empty() && !no_virtiofs.empty())
		missing += std::string(missing.empty() ? "" : "; ") + no_9p + "; or else " + no_virtiofs;
	if (!missing.empty())
		throw unmet_need("kernel '" + k.spec.name + "' (" + k.release +
				 ") lacks what the guest needs, as =y or =m: " + missing);
	return no_9p.empty() ? share_transport::nine_p : share_transport::virtiofs;
}

// `--kernel debian`'s ABI: the one the build was given (PINMATRIX_KERNEL_RELEASE,
// whose headers built the test modules), else, in a package built for any
// kernel, the running kernel's (a Debian node's own).
std::string default_debian_abi()
{
	if (*PINMATRIX_DEFAULT_KERNEL)
		return PINMATRIX_DEFAULT_KERNEL;
	return read_kernel_info().release;
}

// tree:DIR, debs:DIR: DIR, which must be an existing directory.
fs::path existing_dir(const std::string &text, const std::string &arg)
{
	std::error_code ec;
	if (arg.empty())
		throw usage_error("kernel '" + text + "': needs a directory");
	if (!fs::exists(arg, ec))
		throw usage_error("kernel '" + text + "': no directory " + arg);
	if (!fs::is_directory(arg, ec))
		throw usage_error("kernel '" + text + "': " + arg + " is not a directory");
	return fs::absolute(arg);
}

// A tree the user configured and built: its .config and Makefile, and an
// image (bzImage, or vmlinux: vm/kernel-tree.sh checks CONFIG_PVH for it).
void check_built_tree(const std::string &text, const fs::path &tree)
{
	if (!fs::is_regular_file(tree / ".config") || !fs::is_regular_file(tree / "Makefile"))
		throw usage_error("kernel '" + text + "': " + tree.string() +
				  " is not a kernel build tree (no .config or Makefile)");
	if (!fs::is_regular_file(tree / "arch/x86/boot/bzImage") && !fs::is_regular_file(tree / "vmlinux"))
		throw usage_error("kernel '" + text + "': " + tree.string() +
				  " is not built (no arch/x86/boot/bzImage or vmlinux: make bzImage modules)");
}

// "build:", "debian:", "tree:" ...: an empty name after the colon (an
// unset shell variable) is refused, never read as the default kernel.
void require_name_after_colon(const std::string &text, const std::string &source)
{
	const std::string hint = source == "debian" ? "debian:ABI needs an ABI; plain 'debian' is the default kernel"
				 : source == "build" ? "build:NAME needs a name or a fragment; plain 'build' is the default build"
						     : source + ":DIR needs a directory";
	throw usage_error("kernel '" + text + "': empty after ':' (an unset variable?): " + hint);
}

// build:FRAGMENT: a Kconfig fragment, not any file.
void require_fragment(const std::string &text, const std::string &file, const std::string &names)
{
	if (file.empty() || !fs::exists(file))
		throw usage_error("kernel '" + text + "': " +
				  (file.empty() ? std::string("an empty fragment name") : "no Kconfig fragment at " + file) +
				  " (expected build, build:NAME with NAME one of: " + names +
				  ", or build:FRAGMENT[+FRAGMENT...])");
	try {
		require_kconfig_fragment(file, "Kconfig fragment");
	} catch (const usage_error &e) {
		throw usage_error("kernel '" + text + "': " + e.what());
	}
}

// What is wrong with a .deb, before dpkg-deb sees it: a Debian binary
// package is an ar archive whose first member is debian-binary, "2.x".
std::optional<std::string> deb_problem(const fs::path &deb)
{
	std::ifstream in(deb, std::ios::binary);
	std::string head(72, '\0');
	in.read(head.data(), std::streamsize(head.size()));
	if (size_t(in.gcount()) < head.size() || head.compare(0, 8, "!<arch>\n") != 0)
		return "not an ar archive";
	if (head.compare(8, 14, "debian-binary/") != 0 && head.compare(8, 14, "debian-binary ") != 0)
		return "no debian-binary member first";
	if (head.compare(68, 2, "2.") != 0)
		return "debian-binary is not format 2.x";
	return std::nullopt;
}

// Whether dir holds a .deb; throws usage_error for one that is not a
// Debian package (named, and why).
bool has_debs(const std::string &text, const fs::path &dir)
{
	bool found = false;
	for (const auto &e : fs::directory_iterator(dir)) {
		if (e.path().extension() != ".deb" || !e.is_regular_file())
			continue;
		if (const auto problem = deb_problem(e.path()))
			throw usage_error("kernel '" + text + "': " + e.path().filename().string() +
					  " is not a Debian package (" + *problem + ")");
		found = true;
	}
	return found;
}

} // namespace

const std::vector<named_build> &named_builds()
{
	static const std::vector<named_build> table = {
		{"", {"pinmatrix.config"}, "the suite's kernel: CMA, hugetlb, rxe, 9p, kprobes, DRM"},
		{"debug", {"pinmatrix.config", "debug.config"},
		 "the suite's kernel with KASAN, lockdep, DEBUG_VM and DEBUG_ATOMIC_SLEEP"},
		{"coverage", {"pinmatrix.config", "coverage.config"},
		 "the suite's kernel with GCOV_KERNEL: the test modules' line coverage (tools/coverage)"},
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

std::pair<int, std::string> run_capture(const std::vector<std::string> &argv, const output_copy &copy)
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
		if (copy.with_stderr)
			dup2(wr.get(), STDERR_FILENO);
		exec_or_die(argv);
	}
	wr.reset();
	std::string out;
	char buf[4096];
	ssize_t n;
	while ((n = read(rd.get(), buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
		if (n <= 0)
			continue;
		out.append(buf, size_t(n));
		if (copy.show)
			copy.show->write(buf, n).flush();
		if (copy.keep_fd >= 0 && write(copy.keep_fd, buf, size_t(n)) != n)
			throw last_sys_error("write a copy of " + argv[0] + "'s output");
	}
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
	const bool known = k.source == "debian" || k.source == "build" || k.source == "image" ||
			   k.source == "tree" || k.source == "debs";
	if (known && colon != std::string::npos && arg.empty())
		require_name_after_colon(text, k.source);
	if (k.source == "debian") {
		k.abi = arg.empty() ? default_debian_abi() : arg;
		if (!std::regex_match(k.abi, std::regex("[0-9][0-9a-z.+~-]*")))
			throw usage_error("kernel '" + text + "': not a Debian kernel ABI name");
	} else if (k.source == "build") {
		std::string names;
		for (const auto &b : named_builds()) {
			if (arg == b.name)
				for (const char *f : b.fragments)
					k.fragments.push_back(data_dir() / "vm/kconfig" / f);
			if (*b.name)
				names += std::string(names.empty() ? "" : ", ") + b.name;
		}
		// Not a name: fragment files, '+' between them, merged in order
		// (one file whose path holds a '+' is taken whole).
		if (k.fragments.empty()) {
			const auto files = fs::is_regular_file(arg) ? std::vector<std::string>{arg} : split(arg, '+');
			for (const auto &f : files) {
				require_fragment(text, f, names);
				k.fragments.push_back(f);
			}
		}
	} else if (k.source == "image") {
		k.user_dir = arg;
		std::string missing;
		for (const char *f : {"release", "config", "modules", "build"})
			if (!fs::exists(k.user_dir / f))
				missing += std::string(missing.empty() ? "" : ", ") + f;
		if (!fs::exists(k.user_dir / "vmlinux") && !fs::exists(k.user_dir / "vmlinuz"))
			missing += std::string(missing.empty() ? "" : ", ") + "vmlinux or vmlinuz";
		if (arg.empty() || !missing.empty())
			throw usage_error("kernel '" + text + "': an image dir needs " +
					  (missing.empty() ? std::string("a path") : missing));
	} else if (k.source == "tree") {
		k.user_dir = existing_dir(text, arg);
		check_built_tree(text, k.user_dir);
	} else if (k.source == "debs") {
		k.user_dir = existing_dir(text, arg);
		if (!has_debs(text, k.user_dir))
			throw usage_error("kernel '" + text + "': no .deb files in " + arg +
					  " (expected the linux-image- and linux-headers- packages)");
	} else {
		throw usage_error("kernel '" + text +
				  "': expected debian[:ABI], build[@SERIES][:NAME|FRAGMENT[+FRAGMENT...]], image:DIR, "
				  "tree:DIR or debs:DIR");
	}
	return k;
}

std::string kernel_lock_name(const kernel_spec &spec)
{
	std::string identity = spec.source + "\n" + spec.abi + "\n" + spec.series;
	if (!spec.user_dir.empty())
		identity += "\ndir " + fs::absolute(spec.user_dir).string();
	for (const auto &f : spec.fragments)
		identity += "\nfragment " + fs::absolute(f).string();
	for (const auto &p : spec.patches)
		identity += "\npatch " + fs::absolute(p).string();
	return "kernel-" + content_hash(identity);
}

std::string guest_kernel::describe() const
{
	std::string d = spec.source + " " + release;
	if (!spec.patches.empty())
		d += " (+" + std::to_string(spec.patches.size()) + " patches)";
	return d;
}

void require_build_tools_for(const kernel_spec &spec)
{
	if (spec.source == "build")
		require_build_tools(
			{.source_package = true, .patches = !spec.patches.empty(), .fragments = spec.fragments});
}

guest_kernel prepare_kernel(const kernel_spec &spec, const fs::path &cache)
{
	require_build_tools_for(spec);
	guest_kernel k;
	k.spec = spec;
	if (spec.source == "image") {
		k.dir = fs::absolute(spec.user_dir);
	} else {
		std::vector<std::string> argv;
		if (spec.source == "debian") {
			argv = {(data_dir() / "vm/kernel-debian.sh").string(), spec.abi, cache.string()};
		} else if (spec.source == "debs") {
			argv = {(data_dir() / "vm/kernel-debian.sh").string(), "--debs", spec.user_dir.string(),
				cache.string()};
		} else if (spec.source == "tree") {
			argv = {(data_dir() / "vm/kernel-tree.sh").string(), spec.user_dir.string(), cache.string()};
		} else {
			argv = {(data_dir() / "vm/kernel-build.sh").string()};
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
	// that holds the same headers at /usr/src/linux-headers-<ABI>; a tree
	// names itself. .debs without headers have none: kdir stays empty.
	if (fs::exists(k.dir / "kdir"))
		k.kdir = trimmed(read_text_file((k.dir / "kdir").string()));
	else if (spec.source != "debs")
		k.kdir = k.dir / "build";
	if (fs::is_directory(k.dir / "buildroot")) {
		k.build_root = k.dir / "buildroot";
		k.kdir = "/usr/src" / k.kdir.filename();
	}
	if (k.release.empty())
		throw unmet_need("kernel '" + spec.name + "': no release in " + k.dir.string());
	// The release names cache paths (initramfs/<release>-...): one path component.
	if (!std::regex_match(k.release, std::regex("[A-Za-z0-9][A-Za-z0-9._+~-]*")))
		throw unmet_need("kernel '" + spec.name + "': '" + k.release + "' in " + k.dir.string() +
				 "/release is not a kernel release");
	k.share = check_guest_needs(k);
	return k;
}

namespace {

// The test modules as DKMS builds them on a node (debian/: pinmatrix-dkms,
// pinmatrix-ualink-sim-dkms), by DKMS name and directory under kmod/.
struct dkms_module {
	const char *name;
	const char *dir;
};
constexpr dkms_module dkms_test_modules[] = {{"pinmatrix", "pinmatrix"}, {"pinmatrix-ualink-sim", "ualink_sim"}};

// Every regular file under DIR's SUBDIRS, by its path within DIR.
std::map<fs::path, std::string> files_under(const fs::path &dir, std::initializer_list<const char *> subdirs)
{
	std::map<fs::path, std::string> files;
	for (const char *sub : subdirs) {
		if (!fs::is_directory(dir / sub))
			continue;
		for (const auto &e : fs::recursive_directory_iterator(dir / sub))
			if (e.is_regular_file())
				files[fs::relative(e.path(), dir)] = read_text_file(e.path().string());
	}
	return files;
}

// DKMS's build of M for RELEASE at this suite's version, when DKMS built it
// from the very sources of data_dir()/kmod (its source/ link): a checkout's
// edited module is never replaced by an installed one.
std::optional<fs::path> dkms_built(const dkms_module &m, const std::string &release)
{
	const fs::path base = fs::path("/var/lib/dkms") / m.name / std::string(suite_version());
	const fs::path ko = base / release / "x86_64/module" / (std::string(m.dir) + ".ko");
	std::error_code ec;
	if (!fs::is_regular_file(ko, ec))
		return std::nullopt;
	const auto subdirs = {m.dir, "uapi", "conftest"};
	if (files_under(base / "source", subdirs) != files_under(data_dir() / "kmod", subdirs))
		return std::nullopt;
	return ko;
}

// The modules DKMS built for K, in prepare_modules()'s layout (NAME/NAME.ko),
// or none when it did not build pinmatrix.ko from these sources. Without
// DKMS's ualink_sim.ko the UALink model's cases SKIP.
std::optional<fs::path> modules_from_dkms(const guest_kernel &k, const fs::path &cache)
{
	std::vector<std::pair<const dkms_module *, fs::path>> built;
	std::string key;
	for (const auto &m : dkms_test_modules)
		if (auto ko = dkms_built(m, k.release)) {
			built.emplace_back(&m, *ko);
			key += std::string(m.dir) + read_text_file(ko->string());
		}
	if (built.empty() || built.front().first != &dkms_test_modules[0])
		return std::nullopt;
	const fs::path out = cache / "modules" / (k.dir.filename().string() + "-dkms-" + content_hash(key));
	if (!fs::exists(out / ".complete")) {
		for (const auto &[m, ko] : built) {
			fs::create_directories(out / m->dir);
			fs::copy_file(ko, out / m->dir / ko.filename(), fs::copy_options::overwrite_existing);
		}
		unique_fd done(::open((out / ".complete").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	}
	std::cerr << "pinmatrix vm: the test modules for " << k.release << ": DKMS's ("
		  << join(built, ", ", [](const auto &b) { return b.first->dir + std::string(".ko"); }) << ")\n";
	return out;
}

} // namespace

fs::path prepare_modules(const guest_kernel &k, const fs::path &cache)
{
	if (auto dkms = modules_from_dkms(k, cache))
		return *dkms;
	if (k.kdir.empty())
		throw unmet_need("kernel '" + k.spec.name + "' (" + k.release +
				 ") boots, but the test modules cannot build: " + k.spec.user_dir.string() +
				 " has no linux-headers-" + k.release +
				 " .deb (add it, with its -common and linux-kbuild- packages)");
	const fs::path makefile = k.build_root.string() + (k.kdir / "Makefile").string();
	if (!fs::exists(makefile))
		throw unmet_need("no build tree for " + k.release + " at " + makefile.parent_path().string());
	// Keyed by every file of kmod/ (sources, Kbuild, feature tests) and the
	// build script: a change to any of them rebuilds. By their names within
	// kmod/, in order: a checkout and an installed copy share the entry.
	std::string sources = read_text_file((data_dir() / "vm/build-modules.sh").string());
	std::set<fs::path> files;
	for (const auto &e : fs::recursive_directory_iterator(data_dir() / "kmod"))
		if (e.is_regular_file())
			files.insert(fs::relative(e.path(), data_dir() / "kmod"));
	for (const auto &f : files)
		sources += f.string() + read_text_file((data_dir() / "kmod" / f).string());
	const fs::path out = cache / "modules" / (k.dir.filename().string() + "-" + content_hash(sources));
	if (fs::exists(out / ".complete"))
		return out;
	std::vector<std::string> argv = {(data_dir() / "vm/build-modules.sh").string()};
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

std::map<std::string, std::string> modules_left_out(const fs::path &modules)
{
	std::map<std::string, std::string> out;
	std::error_code ec;
	for (const auto &e : fs::directory_iterator(modules, ec))
		if (fs::is_regular_file(e.path() / "left-out"))
			out[e.path().filename().string()] = trimmed(read_text_file((e.path() / "left-out").string()));
	return out;
}

fs::path prepare_initramfs(const guest_kernel &k, const fs::path &cache)
{
	// Keyed by what goes into it, so an edited init script rebuilds it.
	const std::string key = read_text_file((data_dir() / "vm/guest/init").string()) +
				read_text_file((data_dir() / "vm/mkinitramfs.sh").string()) +
				k.dir.string() + k.release + name(k.share);
	fs::path out = cache / "initramfs" / (k.release + "-" + content_hash(key) + ".cpio.gz");
	if (fs::exists(out))
		return out;
	fs::create_directories(out.parent_path());
	auto [rc, ignored] = run_capture({(data_dir() / "vm/mkinitramfs.sh").string(), k.dir.string(),
					  out.string(), name(k.share)});
	if (rc)
		throw unmet_need("cannot build the initramfs for " + k.release +
				 " (vm/mkinitramfs.sh exit " + std::to_string(rc) + ")");
	return out;
}

} // namespace pinmatrix
