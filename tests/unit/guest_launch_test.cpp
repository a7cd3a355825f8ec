// SPDX-License-Identifier: GPL-2.0
// A group's guest as `pinmatrix vm` starts it, without a boot: its plan,
// made once (vm/group_spec.hpp), the job it writes for vm/guest/job.sh
// (vm/guest_job.hpp), QEMU's command line (vm/qemu_command.hpp) and the
// checks before anything is written (vm/matrix_groups.hpp).

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "guest_boot.hpp"
#include "guest_job.hpp"
#include "matrix_groups.hpp"
#include "qemu_command.hpp"
#include "sys_error.hpp"
#include "temp_dir.hpp"

using namespace pinmatrix;
using pinmatrix::test::temp_dir;
using pinmatrix::test::write_file;
namespace fs = std::filesystem;

namespace {

group_spec group(const char *boot, std::vector<std::string> cases)
{
	group_spec g;
	g.kernel = parse_kernel_spec("debian");
	g.boot = &find_boot_placement(boot);
	g.guest.cases = std::move(cases);
	g.out = "/results/g1";
	return g;
}

bool has(const std::vector<std::string> &argv, const std::string &arg)
{
	return std::find(argv.begin(), argv.end(), arg) != argv.end();
}

} // namespace

TEST(GuestPlan, MadeOnceWithWhatTheGuestPrepares)
{
	const group_spec g = group("ordinary", {"pinner/vfio-type1", "backing/memfd", "pinner/vdpa-sim"});
	guest_plan made = make_guest_plan(g);
	const guest_plan plan = std::move(made);	// the entries' owners stay where they were made
	ASSERT_EQ(plan.entries.size(), 3u);
	EXPECT_EQ(suite_sizes(plan.entries), (std::vector<size_t>{1, 2})) << "backing before pinner";
	for (const auto &e : plan.entries)
		EXPECT_TRUE(std::any_of(plan.suites.begin(), plan.suites.end(),
					[&](const auto &s) { return s.get() == e.owner; }));
	EXPECT_TRUE(plan.needs.vfio_edu);
	EXPECT_TRUE(plan.needs.vdpa_sim);
	EXPECT_FALSE(plan.needs.disk_dir) << "memfd is no disk file";
}

// The host writes the records of cases its guest never ran; the host's
// kernel is not the guest's, so a row judged by version says unknown.
TEST(GuestPlan, ARecordWrittenOnTheHostDoesNotJudgeByTheHostsKernel)
{
	const guest_plan plan = make_guest_plan(group("movable", {"pinner/udmabuf", "backing/file-shared-writable"}));
	ASSERT_EQ(plan.entries.size(), 2u);
	for (const auto &e : plan.entries) {
		const case_record r = e.owner->not_run(e.c, verdict::error, "the guest died");
		EXPECT_TRUE(r.expected.at("kernel_version").is_null()) << e.c.id << ": " << r.expected.dump();
	}
}

TEST(GuestPlan, ACommandPreparesNothing)
{
	group_spec g = group("ordinary", {"pinner/vfio-type1"});
	g.guest.guest_cmd = "true";
	const guest_plan plan = make_guest_plan(g);
	EXPECT_EQ(plan.entries.size(), 1u);
	EXPECT_FALSE(plan.needs.vfio_edu);
}

TEST(GuestJob, TheMatrixJobEnv)
{
	group_spec g = group("movable", {"A", "registration"});
	g.guest.fault = "hang-at=A";
	g.guest.strict = true;
	const std::string self = fs::read_symlink("/proc/self/exe").string();
	EXPECT_EQ(guest_job_env(g, {.disk_dir = true}, "/m"),
		  "# Written by pinmatrix vm: what vm/guest/job.sh runs in the guest.\n"
		  "job_mode=matrix\n"
		  "modules='/m'\n"
		  "module_ko='/m/pinmatrix/pinmatrix.ko'\n"
		  "ualink_sim_ko='/m/ualink_sim/ualink_sim.ko'\n"
		  "load_test_modules=1\n"
		  "disk_dir=1\n"
		  "vdpa_sim=0\n"
		  "vfio_edu=0\n"
		  "guest_cmd=''\n"
		  "ssh_key=''\n"
		  "ssh_port=0\n"
		  "run_argv=('" +
			  self +
			  "' 'run' '--out' '/run/pinmatrix' '--results-only' '--device' 'rxe0' '--placement' 'movable' "
			  "'--second-pin' 'ibv_reg_mr' '--module' '/m/pinmatrix/pinmatrix.ko' '--first-pin' 'module' "
			  "'--cases' 'A,registration' '--fault' 'hang-at=A' '--case-timeout' '60' '--strict')\n"
			  "bench_argv=()\n");
}

TEST(GuestJob, AManagedNodesJobEnv)
{
	group_spec g = group("ordinary", {});
	g.guest.ssh_port = 2222;
	g.guest.ssh_key = "/k/it's.pub";
	g.guest.pins.first_pin = pin_sources::stock_source;
	const std::string env = guest_job_env(g, {}, "/m");
	EXPECT_NE(env.find("job_mode=ssh\n"), std::string::npos);
	EXPECT_NE(env.find("ssh_key='/k/it'\\''s.pub'\n"), std::string::npos) << env;
	EXPECT_NE(env.find("ssh_port=2222\n"), std::string::npos);
	EXPECT_NE(env.find("load_test_modules=0\n"), std::string::npos);
	EXPECT_NE(env.find("'--no-module'"), std::string::npos);
}

TEST(QemuCommand, TheDevicesThePlanNeedsAndTheForwardedPort)
{
	group_spec g = group("movable", {});
	g.guest.cpus = 2;
	g.guest.append = "foo=1";
	g.guest.ssh_port = 2222;
	prepared_guest p;
	p.kernel.image = "/k/vmlinux";
	p.initrd = "/k/initrd";
	const qmp_socket qmp;
	const std::string cmdline = guest_cmdline("/k", share_transport::nine_p, g, {.vfio_edu = true});
	EXPECT_NE(cmdline.find(" intel_iommu=on iommu=pt "), std::string::npos);
	EXPECT_TRUE(cmdline.ends_with(" movablecore=512M foo=1")) << cmdline;
	EXPECT_EQ(guest_cmdline("/k", share_transport::nine_p, g, {}).find("intel_iommu"), std::string::npos);
	EXPECT_EQ(cmdline.find("pinmatrix.share="), std::string::npos) << "9p is not named";

	const auto argv = qemu_argv(g, p, {.vfio_edu = true}, cmdline, qmp, "tcg");
	EXPECT_EQ(argv.front(), "qemu-system-x86_64");
	const auto at = [&](const std::string &a) { return std::find(argv.begin(), argv.end(), a) - argv.begin(); };
	EXPECT_EQ(argv[at("-m") + 1], "1024") << "the boot's memory";
	EXPECT_EQ(argv[at("-smp") + 1], "2");
	EXPECT_EQ(argv[at("-append") + 1], cmdline);
	EXPECT_LT(at("intel-iommu,intremap=off"), at("-virtfs")) << "the IOMMU before the devices it translates for";
	EXPECT_TRUE(has(argv, "edu"));
	EXPECT_TRUE(has(argv, "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:2222-:22"));
	EXPECT_FALSE(has(qemu_argv(g, p, {}, cmdline, qmp, "tcg"), "edu"));
	EXPECT_EQ(argv[at("-accel") + 1], "tcg");
	EXPECT_EQ(argv[at("-cpu") + 1], "qemu64,+pdpe1gb,+rdrand");
	// KVM: the host's CPU.
	const auto kvm = qemu_argv(g, p, {}, cmdline, qmp, "kvm");
	const auto kvm_at = [&](const std::string &a) { return std::find(kvm.begin(), kvm.end(), a) - kvm.begin(); };
	EXPECT_EQ(kvm[kvm_at("-accel") + 1], "kvm");
	EXPECT_EQ(kvm[kvm_at("-cpu") + 1], "host");
}

// A kernel without 9p: both shares over virtiofs, each from a virtiofsd
// this object started (listening on its socket) and ends; the guest's
// memory a shared memfd (vhost-user maps it), the guest told by its
// command line.
TEST(QemuCommand, VirtiofsSharesWhereTheKernelHasNo9p)
{
	if (geteuid() != 0 || !virtiofs_unmet().empty())
		GTEST_SKIP() << "needs root and virtiofsd: " << virtiofs_unmet();
	const temp_dir out;
	fs::create_directories(out / "guest");
	group_spec g = group("movable", {});
	g.out = out.path();
	prepared_guest p;
	p.kernel.image = "/k/vmlinux";
	p.initrd = "/k/initrd";
	const qmp_socket qmp;
	const std::string cmdline = guest_cmdline("/k", share_transport::virtiofs, g, {});
	EXPECT_NE(cmdline.find(" pinmatrix.share=virtiofs "), std::string::npos) << cmdline;
	std::vector<std::string> sockets;
	{
		const virtiofs_shares shares(out / "guest", out.path());
		const auto argv = qemu_argv(g, p, {}, cmdline, qmp, "tcg", &shares);
		EXPECT_FALSE(has(argv, "-virtfs"));
		EXPECT_TRUE(has(argv, "memory-backend-memfd,id=mem,share=on,size=1024M"));
		EXPECT_TRUE(has(argv, "vhost-user-fs-pci,chardev=vfs-hostroot,tag=hostroot"));
		EXPECT_TRUE(has(argv, "vhost-user-fs-pci,chardev=vfs-results,tag=results"));
		for (const auto &a : argv)
			if (a.starts_with("socket,id=vfs-"))
				sockets.push_back(a.substr(a.find(",path=") + 6));
		ASSERT_EQ(sockets.size(), 2u);
		for (const auto &s : sockets)
			EXPECT_TRUE(fs::is_socket(s)) << s;
		EXPECT_TRUE(fs::exists(out / "virtiofsd-hostroot.log"));
	}
	for (const auto &s : sockets)
		EXPECT_FALSE(fs::exists(fs::path(s).parent_path())) << "the sockets' directory is removed";
}

TEST(SingleGroup, CheckedAndPlannedBeforeAnythingIsWritten)
{
	vm_options opt;
	opt.out = "/results/one";
	opt.guest.cases = {"A", "pinner/vfio-type1"};
	opt.guest.ssh_key = "relative.pub";
	const planned_group one = single_group(opt);
	EXPECT_EQ(one.plan.entries.size(), 2u);
	EXPECT_TRUE(one.plan.needs.vfio_edu);
	EXPECT_TRUE(one.spec.guest.ssh_key.is_absolute());
	EXPECT_EQ(one.spec.out, fs::path("/results/one"));

	opt.guest.memory_mib = 512;
	EXPECT_THROW(single_group(opt), usage_error) << "below the boot's 1024 MiB";
	opt.guest.memory_mib = 0;
	opt.guest.append = std::string(2000, 'x');
	EXPECT_THROW(single_group(opt), usage_error) << "longer than x86's command line";
	opt.guest.append.clear();
	opt.guest.cases = {"no-such-case"};
	EXPECT_THROW(single_group(opt), usage_error);
	opt.guest.cases.clear();
	opt.out = "/results/a,b";
	EXPECT_THROW(single_group(opt), usage_error) << "a comma ends QEMU's -virtfs option";
}

// The harness's share of a boot: the wall time less the cases' durations;
// nothing to say without a timed case, and never a negative harness.
TEST(GuestPhases, TheHarnessIsTheWallTimeLessTheCases)
{
	const nlohmann::json cases = nlohmann::json::parse(
		R"([{"id": "A", "duration_ns": 3000000000}, {"id": "B", "duration_ns": 5000000000}, {"id": "C"}])");
	const auto h = harness_share(cases, 10.0);
	EXPECT_DOUBLE_EQ(h["cases_s"].get<double>(), 8.0);
	EXPECT_DOUBLE_EQ(h["harness_s"].get<double>(), 2.0);
	EXPECT_DOUBLE_EQ(h["share"].get<double>(), 0.2);
	EXPECT_EQ(harness_text({{"harness", h}}), ", cases 8.0 s, harness 20%");
	EXPECT_TRUE(harness_share(nlohmann::json::parse(R"([{"id": "A"}])"), 10.0).empty());
	EXPECT_TRUE(harness_share(cases, 0).empty());
	EXPECT_DOUBLE_EQ(harness_share(cases, 7.0)["harness_s"].get<double>(), 0.0);
	EXPECT_EQ(harness_text(nlohmann::json::object()), "");
}

// A cold cache's preparation is said step by step and left out of "boot to
// verdict"; a warm one (under a second) is not said.
TEST(GuestPhases, ThePreparationIsSaidWhenItTookASecond)
{
	const step_times cold = {{"kernel", 30100}, {"test modules", 29000}, {"initramfs", 2100}};
	EXPECT_EQ(prepared_text(cold), "the guest prepared in 61.2 s: kernel 30.1 s, test modules 29.0 s, initramfs 2.1 s");
	EXPECT_EQ(prepared_text({{"kernel", 20}, {"test modules", 500}, {"initramfs", 300}}), "");
	EXPECT_EQ(prepared_text({}), "");
	const nlohmann::json vm = {{"prepare_ms", step_times_json(cold)}};
	EXPECT_DOUBLE_EQ(prepared_seconds(vm), 61.2);
	EXPECT_DOUBLE_EQ(prepared_seconds(nlohmann::json::object()), 0.0);
	EXPECT_DOUBLE_EQ(prepared_seconds(nlohmann::json::parse(R"({"prepare_ms": "garbage"})")), 0.0);
}

// The guest mounts over the host root's /lib/modules and /run: a root
// without them (a container, a chroot with no kernel) is said before the
// boot, with what to create, not met by the guest's init after it.
TEST(GuestRoot, AHostRootWithoutTheGuestsMountPointsIsSaidBeforeTheBoot)
{
	temp_dir root;
	for (const char *d : {"run", "dev", "proc", "sys", "bin"})
		fs::create_directories(root / d);
	write_file(root / "bin/bash", "");
	EXPECT_EQ(host_root_unfit_for_guest(root.path()),
		  "the guest boots on the host's root and mounts over its /lib/modules, /run, /dev, /proc and /sys; "
		  "this host has no /lib/modules (a container, or a chroot with no kernel installed?): mkdir -p "
		  "/lib/modules, and run again");
	fs::create_directories(root / "lib/modules");
	EXPECT_EQ(host_root_unfit_for_guest(root.path()), "");
	fs::remove(root / "bin/bash");
	fs::remove(root / "run");
	fs::remove(root / "sys");
	EXPECT_EQ(host_root_unfit_for_guest(root.path()),
		  "the guest boots on the host's root and mounts over its /lib/modules, /run, /dev, /proc and /sys; "
		  "this host has no /run, /sys (a container, or a chroot with no kernel installed?): mkdir -p /run "
		  "/sys, and run again; the guest runs the host's /bin/bash: this host has none");
	EXPECT_EQ(host_root_unfit_for_guest("/"), "") << "this host boots guests";
}
