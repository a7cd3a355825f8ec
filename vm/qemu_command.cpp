// SPDX-License-Identifier: GPL-2.0
#include "qemu_command.hpp"

#include <algorithm>
#include <cctype>

#include "data_dir.hpp"
#include "report_input.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

const char *const qboot = "/usr/share/qemu/qboot.rom";

// x86 keeps 2,048 bytes of kernel command line (COMMAND_LINE_SIZE, its NUL included).
constexpr size_t max_cmdline = 2047;

// The kernel's dir before it is prepared: an image's own, else a cache dir
// (kernels/debian-<ABI>, build-<key>, ...) no longer than this.
fs::path kernel_dir_bound(const group_spec &g)
{
	if (g.kernel.source == "image")
		return fs::absolute(g.kernel.user_dir);
	return g.guest.cache / "kernels" / std::string(std::max<size_t>(64, g.kernel.abi.size() + 40), 'x');
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

} // namespace

std::string boot_append(const group_spec &g)
{
	return std::string(g.boot->append) + (g.guest.append.empty() ? "" : " " + g.guest.append);
}

// cryptomgr.notests: the crypto self-tests cost ~0.4 s of a TCG boot.
// sysrq_always_enabled: the keyboard's SysRq dumps for a wedged guest
// (vm/guest_boot.cpp; Debian's default mask allows none of them).
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
// pinmatrix.share=virtiofs: the shares' transport where the kernel has no 9p
// (vm/guest/init); 9p, the default, is not named.
std::string guest_cmdline(const fs::path &kernel_dir, share_transport share, const group_spec &g,
			  const guest_needs &needs)
{
	return "console=ttyS0 panic=-1 quiet cryptomgr.notests sysrq_always_enabled secretmem.enable=1 "
	       "rcupdate.rcu_cpu_stall_timeout=300 watchdog_thresh=60 random.trust_cpu=on " +
	       std::string(needs.vfio_edu ? "intel_iommu=on iommu=pt " : "") +
	       std::string(share == share_transport::virtiofs ? "pinmatrix.share=virtiofs " : "") + "pinmatrix.kdir=" +
	       kernel_dir.string() + " pinmatrix.stage2=" + (data_dir() / "vm/guest/stage2").string() + " " +
	       boot_append(g);
}

void check_guest_paths(const group_spec &g)
{
	if (g.kernel.source == "image")
		require_cmdline_path(fs::absolute(g.kernel.user_dir), "image:");
	else
		require_cmdline_path(fs::absolute(g.guest.cache), "--cache");
	require_cmdline_path(data_dir(), "the install directory");
	// QEMU's -virtfs and -qmp options are comma-separated: a comma in the
	// path would end it.
	if (g.out.string().find(',') != std::string::npos)
		throw usage_error("--out '" + report::one_line(g.out.string()) +
				  "': a comma there would split QEMU's -virtfs option (choose a path without one)");
}

void check_cmdline_length(const group_spec &g, const guest_needs &needs)
{
	if (const size_t n = guest_cmdline(kernel_dir_bound(g), share_transport::virtiofs, g, needs).size(); n > max_cmdline)
		throw usage_error("--append: the guest's command line would take " + std::to_string(n) +
				  " bytes and x86 takes at most " + std::to_string(max_cmdline));
}

std::vector<std::string> qemu_argv(const group_spec &g, const prepared_guest &p, const guest_needs &needs,
				   const std::string &cmdline, const qmp_socket &qmp, const std::string &accel,
				   const virtiofs_shares *virtiofs)
{
	// The uncompressed vmlinux (PVH entry) saves seconds of XZ unpacking in
	// an emulated guest; qboot and q35 start faster than SeaBIOS and i440FX.
	// Under TCG, pdpe1gb: 1 GiB pages, without which hugetlb_cma= reserves
	// nothing; rdrand: the kernel seeds its crng at boot (RANDOM_TRUST_CPU,
	// or random.trust_cpu=on: guest_cmdline); without it the first
	// getrandom() waited ~1 s for entropy. Under KVM the host's CPU, which
	// has both where the host does.
	const bool kvm = accel == "kvm";
	std::vector<std::string> argv = {
		"qemu-system-x86_64", "-machine", "q35", "-accel", kvm ? "kvm" : "tcg",
		"-cpu", kvm ? g.guest.kvm_cpu : "qemu64,+pdpe1gb,+rdrand",
		"-m", std::to_string(guest_memory_mib(g)),
		"-smp", std::to_string(g.guest.cpus), "-nodefaults", "-display", "none", "-no-reboot",
		"-serial", "file:" + (g.out / "serial.log").string(),
		"-pidfile", (g.out / "qemu.pid").string(),
		"-kernel", p.kernel.image.string(), "-initrd", p.initrd.string(),
		"-append", cmdline,
	};
	// The IOMMU before the PCI devices it translates for; edu: a device
	// with a DMA engine for vfio-pci (lib/vfio_type1_pin.hpp).
	if (needs.vfio_edu)
		argv.insert(argv.end(), {"-device", "intel-iommu,intremap=off", "-device", "edu"});
	if (virtiofs) {
		const auto shares = virtiofs->qemu_args(guest_memory_mib(g));
		argv.insert(argv.end(), shares.begin(), shares.end());
	} else {
		argv.insert(argv.end(), {
			"-virtfs", "local,path=/,mount_tag=hostroot,readonly=on,security_model=none,multidevs=remap",
			"-virtfs", "local,path=" + (g.out / "guest").string() + ",mount_tag=results,security_model=none",
		});
	}
	if (fs::exists(qboot))
		argv.insert(argv.begin() + 1, {"-bios", qboot});
	argv.insert(argv.end(), {"-qmp", qmp.qemu_arg()});
	if (g.guest.ssh_port) {
		// Loopback only; restrict=on: the guest reaches nothing outside.
		const std::string fwd = "hostfwd=tcp:127.0.0.1:" + std::to_string(g.guest.ssh_port) + "-:22";
		argv.insert(argv.end(), {"-netdev", "user,id=n0,restrict=on," + fwd, "-device",
					 "virtio-net-pci,netdev=n0"});
	}
	return argv;
}

} // namespace pinmatrix
