// SPDX-License-Identifier: GPL-2.0
#pragma once

// Guest kernels as a matrix dimension: Debian's stock package (by ABI), a
// cached build from Debian's linux-source with Kconfig fragments layered in
// order (and optional patches), a user-supplied image, the user's own
// built kernel tree, or a vendor's kernel as .deb files. Each ends as one directory
// in the cache: vmlinux and/or vmlinuz, release, config, modules/, and a
// build tree to compile the test modules against.

#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace pinmatrix {

struct kernel_spec {
	std::string name;		// as the user named it
	std::string source;		// "debian" | "build" | "image" | "tree" | "debs"
	std::string abi;		// debian
	std::vector<std::filesystem::path> fragments;	// build, in merge order
	std::vector<std::filesystem::path> patches;	// build
	std::string series;		// build: linux-source-<series>, "" = 6.1
	std::filesystem::path user_dir;	// image, tree, debs: the directory named
};

// "debian" (the default ABI), "debian:<ABI>" (bookworm, trixie or unstable),
// "build" (pinmatrix.config on linux-source-6.1), "build@<series>" (another
// linux-source, e.g. build@6.12:debug),
// "build:<name>" (a named build: debug), "build:<fragment>[+<fragment>...]",
// "image:<dir>", "tree:<dir>" (a kernel build tree, `make bzImage modules`
// done), "debs:<dir>" (a kernel's image and headers .debs). Throws usage_error.
kernel_spec parse_kernel_spec(const std::string &text);

// The name of the cache lock a kernel's preparation holds
// (vm/cache_lock.hpp): one per kernel as specified (source, ABI, series,
// fragments, patches, directory), so that two runs wanting one kernel take
// turns and runs wanting different kernels do not wait on each other.
std::string kernel_lock_name(const kernel_spec &spec);

// The named builds and their fragments, for --help and error messages.
struct named_build {
	const char *name;	// "" is plain `build`
	std::vector<const char *> fragments;	// in vm/kconfig/, in merge order
	const char *what;
};
const std::vector<named_build> &named_builds();

// How the guest reaches the host's root (read-only) and its results dir
// (vm/qemu_command.cpp, vm/guest/init): 9p where the kernel has it, else
// virtiofs (Debian's cloud kernels: VIRTIO_FS=y and no 9p).
enum class share_transport { nine_p, virtiofs };
constexpr const char *name(share_transport s)
{
	return s == share_transport::nine_p ? "9p" : "virtiofs";
}

struct guest_kernel {
	kernel_spec spec;
	std::filesystem::path dir;
	std::string release;
	std::filesystem::path image;	// vmlinux (PVH, fast under TCG) or vmlinuz
	std::filesystem::path kdir;	// build tree for out-of-tree modules (inside build_root if set)
	std::filesystem::path build_root;	// a root to build modules in, or empty: the host
	std::string config;		// .config text
	share_transport share = share_transport::nine_p;
	std::string describe() const;	// "debian 6.1.0-57-amd64", "build <hash> (+2 patches)"
};

// What vm/kernel-build.sh needs of the host for SPEC (a build), before it
// starts anything: throws unmet_need naming each missing tool and the
// apt-get command (vm/build_tools.hpp). Nothing for other sources.
void require_build_tools_for(const kernel_spec &spec);

// Downloads or builds as needed (cached), with progress on stderr.
// Throws unmet_need when it cannot be had here.
guest_kernel prepare_kernel(const kernel_spec &spec, const std::filesystem::path &cache);

// The project's modules built for this kernel (cached by source content);
// returns the directory holding <name>/<name>.ko.
std::filesystem::path prepare_modules(const guest_kernel &k, const std::filesystem::path &cache);

// The test modules prepare_modules() left out for a kernel that cannot
// have them (vm/build-modules.sh: NAME/left-out), by name: why.
std::map<std::string, std::string> modules_left_out(const std::filesystem::path &modules);

std::filesystem::path prepare_initramfs(const guest_kernel &k, const std::filesystem::path &cache);

// In a forked child: becomes argv[0], or exits 127 (as a shell would).
[[noreturn]] void exec_or_die(const std::vector<std::string> &argv);

// What run_capture() does with the child's output besides returning it.
struct output_copy {
	bool with_stderr = false;	// the child's stderr too (else it passes through)
	std::ostream *show = nullptr;	// each piece as it comes, e.g. std::cout
	int keep_fd = -1;		// and into this file, e.g. a log (a failed write throws)
};

// Runs argv, returns (exit status, its stdout with trailing white space
// trimmed); stderr passes through unless copy says otherwise.
std::pair<int, std::string> run_capture(const std::vector<std::string> &argv, const output_copy &copy = {});

} // namespace pinmatrix
