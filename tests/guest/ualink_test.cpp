// SPDX-License-Identifier: GPL-2.0
// The UALink reference model (kmod/ualink_sim, a test double for amdgpu) and
// the UALink suite, in a guest:
//  - the model's answers to bad input, and its object lifetimes under
//    concurrency and SIGKILL (counts back to baseline, no WARN/BUG/oops);
//  - the suite checks itself: with no fault bit every ualink case PASSes,
//    and with each fault bit on, the case fault_table() names for it FAILs.
//
// Runs as root inside `pinmatrix vm --guest-cmd` (ctest vm.ualink). Loads the
// model as a job has to: `modprobe drm_shmem_helper` (which pulls in drm),
// then finit_module() of $UALINK_SIM_MODULE, else
// $PINMATRIX_MODULES/ualink_sim/ualink_sim.ko (set by pinmatrix vm), else the
// build tree's. The suite runs write /run/pinmatrix/results.json (all cases,
// no fault) and /run/pinmatrix/faults/<bit>/results.json.

#include <fcntl.h>
#include <signal.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <xf86drm.h>

#include "command.hpp"
#include "kernel_info.hpp"
#include "kernel_log.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "ualink/ualink_cases.hpp"
#include "ualink/ualink_device.hpp"
#include "unique_fd.hpp"

using namespace pinmatrix;
using namespace pinmatrix::ualink;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr uint32_t vram = AMDGPU_GEM_DOMAIN_VRAM;
const fs::path results_dir = "/run/pinmatrix";

std::string module_path()
{
	if (const char *p = std::getenv("UALINK_SIM_MODULE"))
		return p;
	if (const char *d = std::getenv("PINMATRIX_MODULES"))
		return std::string(d) + "/ualink_sim/ualink_sim.ko";
	return UALINK_SIM_KO;
}

bool loaded()
{
	return fs::exists("/sys/module/ualink_sim");
}

void load_model()
{
	// ualink_sim needs drm and drm_shmem_helper (modinfo: depends).
	ASSERT_EQ(system("modprobe drm_shmem_helper"), 0) << "modprobe drm_shmem_helper";
	const std::string ko = module_path();
	unique_fd fd(::open(ko.c_str(), O_RDONLY | O_CLOEXEC));
	ASSERT_TRUE(fd) << ko << ": " << strerror(errno);
	ASSERT_EQ(syscall(SYS_finit_module, fd.get(), "", 0), 0) << ko << ": " << strerror(errno);
	// devtmpfs makes the render nodes asynchronously.
	for (int i = 0; i < 200 && discover().accels.size() < 4; i++)
		usleep(10'000);
	ASSERT_GE(discover().accels.size(), 3u) << "the model's render nodes did not appear";
}

void reset_pod()
{
	set_model_faults(0);
	for (const auto &a : discover().accels) {
		a.set_accel_state("active");
		a.reset_node();
	}
}

// Waits for the model's module reference count to drop (dma-buf releases
// run when the closing task returns to user space) and unloads it.
int unload_model()
{
	for (int i = 0; i < 200; i++) {
		if (!syscall(SYS_delete_module, "ualink_sim", O_NONBLOCK))
			return 0;
		usleep(10'000);
	}
	return -errno;
}

std::string kernel_log()
{
	std::string log(1 << 21, '\0');
	const int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log.data(), int(log.size()));
	log.resize(n > 0 ? size_t(n) : 0);
	return log;
}

// Lines of the kernel log that report a bug (lib/kernel_log.cpp's table).
size_t alarms(std::string *first = nullptr)
{
	const auto found = kernel_alarms(kernel_log());
	if (!found.empty() && first)
		*first = found.front();
	return found.size();
}

json counts(const accel &a)
{
	const auto s = a.stats();
	return {{"bos", s.bos},	    {"remote_objects", s.remote_objects}, {"exports", s.exports},
		{"imports", s.imports}, {"pins", s.pins}};
}

json settled(const accel &a, const json &want)
{
	json now;
	for (int i = 0; i < 200; i++) {
		now = counts(a);
		if (now == want)
			break;
		usleep(10'000);
	}
	return now;
}

template <typename T> int raw_ioctl(const accel &a, unsigned long req, T &arg)
{
	return drmIoctl(a.fd(), req, &arg) ? -errno : 0;
}

class ModelEnvironment : public ::testing::Environment {
public:
	void SetUp() override
	{
		ASSERT_EQ(geteuid(), 0u) << "runs as root in a guest (pinmatrix vm --guest-cmd)";
		if (!loaded()) {
			load_model();
			we_loaded_ = true;
		}
		reset_pod();
		alarms_before_ = alarms();
	}

	// Whatever the tests did: no kernel complaint, and nothing holds the
	// module (every dma-buf and import released), so it unloads.
	void TearDown() override
	{
		if (!loaded())
			return;
		reset_pod();
		std::string first;
		EXPECT_EQ(alarms(&first), alarms_before_) << "kernel log: " << first;
		if (we_loaded_) {
			EXPECT_EQ(unload_model(), 0) << "ualink_sim still held after every test";
		}
	}

private:
	bool we_loaded_ = false;
	size_t alarms_before_ = 0;
};

const auto *env = ::testing::AddGlobalTestEnvironment(new ModelEnvironment);

class Model : public ::testing::Test {
protected:
	void SetUp() override
	{
		found_ = discover();
		ASSERT_GE(found_.accels.size(), 3u);
		ASSERT_TRUE(found_.accels[0].is_model());
		base_ = counts(a());
	}
	void TearDown() override
	{
		// Every test leaves the pod as it found it.
		EXPECT_EQ(settled(a(), base_), base_);
	}
	const accel &a() const { return found_.accels[0]; }
	const accel &b() const { return found_.accels[1]; }
	const accel &c() const { return found_.accels[2]; }

	discovery found_;
	json base_;
};

} // namespace

// ---------------------------------------------------------------------------
// Bad input: refused with an errno, nothing allocated, nothing in the log

TEST_F(Model, GemCreateRefusesBadArguments)
{
	auto create = [&](uint64_t size, uint32_t domains, uint32_t flags) {
		drm_ualink_sim_gem_create arg{};
		arg.size = size;
		arg.domains = domains;
		arg.flags = flags;
		const int rc = raw_ioctl(a(), DRM_IOCTL_UALINK_SIM_GEM_CREATE, arg);
		if (!rc)
			a().gem_close(arg.handle);
		return rc;
	};
	EXPECT_EQ(create(0, vram, 0), -EINVAL);
	EXPECT_EQ(create(UALINK_SIM_BO_MAX_SIZE + 1, vram, 0), -EINVAL);
	EXPECT_EQ(create(~0ull, vram, 0), -EINVAL);
	EXPECT_EQ(create(4096, 0, 0), -EINVAL);
	EXPECT_EQ(create(4096, 0x1, 0), -EINVAL);
	EXPECT_EQ(create(4096, 0x8, 0), -EINVAL);
	EXPECT_EQ(create(4096, vram, 1), -EINVAL);
	EXPECT_EQ(counts(a()), base_) << "a refused create allocated something";
	EXPECT_EQ(create(4096, vram, 0), 0);

	auto odd = a().create_bo(1, vram);
	EXPECT_EQ(a().info(odd.get()).size, 4096u) << "sizes round up to pages";
}

TEST_F(Model, MissingHandlesAreENOENTEverywhere)
{
	for (uint32_t h : {0u, 12345u, 0xffffffffu}) {
		SCOPED_TRACE(h);
		drm_ualink_sim_gem_info info;
		EXPECT_EQ(a().try_info(h, info), -ENOENT);
		EXPECT_EQ(a().try_evict(h), -ENOENT);
		uint64_t off;
		EXPECT_EQ(a().try_gem_mmap_offset(h, off), -ENOENT);
		std::vector<std::byte> buf(16);
		EXPECT_EQ(a().try_remote_access(h, false, 0, buf), -ENOENT);
		handle128 out;
		EXPECT_EQ(a().try_export(h, out), -ENOENT);
	}
}

TEST_F(Model, RemoteAccessRefusesBadRangesAndPointers)
{
	auto bo = a().create_bo(64 << 10, vram);
	auto fd = b().import(a().export_bo(bo.get()));
	auto rh = b().prime_to_handle(fd.get());
	auto access = [&](uint32_t op, uint64_t offset, uint64_t size, uint64_t data) {
		drm_ualink_sim_remote_access arg{};
		arg.handle = rh.get();
		arg.op = op;
		arg.offset = offset;
		arg.size = size;
		arg.data = data;
		return raw_ioctl(b(), DRM_IOCTL_UALINK_SIM_REMOTE_ACCESS, arg);
	};
	std::vector<std::byte> buf(UALINK_SIM_ACCESS_MAX + 1);
	const uint64_t p = reinterpret_cast<uintptr_t>(buf.data());
	EXPECT_EQ(access(2, 0, 16, p), -EINVAL) << "unknown op";
	EXPECT_EQ(access(UALINK_SIM_ACCESS_READ, 0, 0, p), -EINVAL) << "size 0";
	EXPECT_EQ(access(UALINK_SIM_ACCESS_READ, 0, UALINK_SIM_ACCESS_MAX + 1, p), -EINVAL);
	EXPECT_EQ(access(UALINK_SIM_ACCESS_READ, 64 << 10, 1, p), -EINVAL) << "past the end";
	EXPECT_EQ(access(UALINK_SIM_ACCESS_READ, (64 << 10) - 1, 2, p), -EINVAL) << "across the end";
	EXPECT_EQ(access(UALINK_SIM_ACCESS_WRITE, ~0ull, 1, p), -EINVAL) << "offset overflow";
	EXPECT_EQ(access(UALINK_SIM_ACCESS_WRITE, 1ull << 63, 4096, p), -EINVAL);
	EXPECT_EQ(access(UALINK_SIM_ACCESS_READ, 0, 4096, 0), -EFAULT) << "NULL buffer";
	EXPECT_EQ(access(UALINK_SIM_ACCESS_WRITE, 0, 4096, 1), -EFAULT) << "bad buffer";
	EXPECT_EQ(access(UALINK_SIM_ACCESS_READ, (64 << 10) - 1, 1, p), 0) << "the last byte";
	// Loads and stores are for imported objects only.
	EXPECT_EQ(a().try_remote_access(bo.get(), false, 0, std::span(buf).first(16)), -EINVAL);
}

TEST_F(Model, WrongKindOfObjectIsRefused)
{
	auto bo = a().create_bo(8192, vram);
	auto fd = b().import(a().export_bo(bo.get()));
	auto rh = b().prime_to_handle(fd.get());
	EXPECT_EQ(b().try_evict(rh.get()), -EINVAL) << "evicting an imported object";
	uint64_t off = 0;
	EXPECT_EQ(b().try_gem_mmap_offset(rh.get(), off), -EPERM) << "remote memory is not CPU mappable";
	handle128 h;
	EXPECT_EQ(b().try_export(rh.get(), h), -EOPNOTSUPP) << "re-exporting an imported object";
	// A made-up mmap offset on the DRM fd.
	void *m = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, b().fd(), off_t(1) << 40);
	EXPECT_EQ(m, MAP_FAILED);
	if (m != MAP_FAILED)
		munmap(m, 4096);
	// The BO's own offset works.
	ASSERT_EQ(a().try_gem_mmap_offset(bo.get(), off), 0);
	m = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, a().fd(), off_t(off));
	ASSERT_NE(m, MAP_FAILED) << strerror(errno);
	static_cast<char *>(m)[100] = 42;
	munmap(m, 8192);
}

// A third accelerator's PRIME import of an imported object is a dynamic
// attachment (kind ATTACHED, mapped): remote memory still, with no CPU view
// and no UALink export of its own.
TEST_F(Model, ImportedObjectIsAttachedDynamicallyByAThirdAccelerator)
{
	auto bo = a().create_bo(8192, vram);
	auto fd = b().import(a().export_bo(bo.get()));
	gem_handle attached = c().prime_to_handle(fd.get());
	const auto info = c().info(attached.get());
	EXPECT_EQ(info.kind, unsigned(UALINK_SIM_GEM_KIND_ATTACHED));
	EXPECT_EQ(info.pins, 1u) << "mapped";
	EXPECT_EQ(info.revoked, 0u);
	uint64_t offset = 0;
	EXPECT_EQ(c().try_gem_mmap_offset(attached.get(), offset), -EPERM);
	handle128 out;
	EXPECT_EQ(c().try_export(attached.get(), out), -EOPNOTSUPP) << "an attachment is not C's memory";
	// The exporter's own dma-buf goes anywhere through PRIME.
	auto own = a().prime_export(bo.get());
	auto on_c = c().prime_to_handle(own.get());
	EXPECT_NE(on_c.get(), 0u);
	EXPECT_EQ(c().try_export(on_c.get(), out), -EOPNOTSUPP) << "a PRIME import is not C's memory";
}

TEST_F(Model, ZeroAndAllOnesHandlesAreRefused)
{
	unique_fd fd;
	EXPECT_EQ(a().try_import({0, 0}, fd), -EINVAL) << "accel 0 itself, nothing exported";
	EXPECT_EQ(b().try_import({0, 0}, fd), -EINVAL) << "accel 0 from a peer";
	EXPECT_EQ(b().try_import({~0ull, ~0ull}, fd), -EINVAL) << "accel id 1023";
	drm_amdgpu_ualink_handle arg;
	std::memset(&arg, 0xff, sizeof(arg));
	EXPECT_EQ(a().ualink_ioctl(arg), -EINVAL) << "all ones";
}

TEST_F(Model, SysfsKnobsRefuseGarbage)
{
	auto write = [&](const char *file, const std::string &text) {
		unique_fd fd(::open((a().sysfs() / file).c_str(), O_WRONLY | O_CLOEXEC));
		if (!fd)
			return -errno;
		return ::write(fd.get(), text.data(), text.size()) < 0 ? -errno : 0;
	};
	EXPECT_EQ(write("accel_state", "bogus"), -EINVAL);
	EXPECT_EQ(write("accel_state", "ACTIVE"), -EINVAL);
	EXPECT_EQ(write("reset", "maybe"), -EINVAL);
	EXPECT_EQ(write("reset", "0"), 0);
	EXPECT_EQ(write("accel_id", "7"), -EACCES);
	EXPECT_EQ(a().accel_state(), "active");
}

// ---------------------------------------------------------------------------
// Limits and descriptors (issue 13, item 11)

namespace {

const fs::path pin_limit_knob = "/sys/module/ualink_sim/parameters/pin_limit_mib";

size_t open_fds()
{
	size_t n = 0;
	for (const auto &e : fs::directory_iterator("/proc/self/fd")) {
		(void)e;
		n++;
	}
	return n;
}

// The UALink ioctl with its argument on a read-only page: DRM copies it in,
// the handler acts, the copy-out fails.
int ualink_ioctl_readonly(const accel &a, const drm_amdgpu_ualink_handle &arg)
{
	const size_t page = size_t(sysconf(_SC_PAGESIZE));
	void *p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	std::memcpy(p, &arg, sizeof(arg));
	mprotect(p, page, PROT_READ);
	const int rc = drmIoctl(a.fd(), DRM_IOCTL_AMDGPU_UALINK_HANDLE, p) ? -errno : 0;
	munmap(p, page);
	return rc;
}

std::string read_text(const fs::path &p)
{
	std::ifstream in(p);
	std::string s;
	std::getline(in, s);
	return s;
}

bool write_text(const fs::path &p, const std::string &text)
{
	std::ofstream out(p);
	out << text;
	out.flush();
	return bool(out);
}

} // namespace

// Exported BOs stay pinned: the pod caps what all exports pin together, and
// an export past the cap is refused (ENOSPC), not an OOM kill.
TEST_F(Model, ExportsPastThePodPinCapAreRefused)
{
	ASSERT_TRUE(fs::exists(pin_limit_knob)) << "no pod-wide pin cap (" << pin_limit_knob << ")";
	const std::string saved = read_text(pin_limit_knob);
	EXPECT_GT(std::stoul(saved), 0u) << "a default cap is set at load";
	EXPECT_EQ(a().stats().pin_limit_bytes, std::stoull(saved) << 20);
	ASSERT_TRUE(write_text(pin_limit_knob, "1"));
	const uint64_t pinned0 = a().stats().pinned_bytes;
	ASSERT_EQ(pinned0, 0u) << "another test left exports behind";

	auto x = a().create_bo(512 << 10, vram);
	auto y = b().create_bo(512 << 10, vram);
	auto z = c().create_bo(4096, vram);
	handle128 hx, hy, hz;
	EXPECT_EQ(a().try_export(x.get(), hx), 0);
	EXPECT_EQ(b().try_export(y.get(), hy), 0) << "up to the cap, over all accelerators";
	EXPECT_EQ(a().stats().pinned_bytes, 1u << 20);
	EXPECT_EQ(a().stats().pin_limit_bytes, 1u << 20);
	EXPECT_EQ(c().try_export(z.get(), hz), -ENOSPC) << "one page past the cap";
	handle128 again;
	EXPECT_EQ(a().try_export(x.get(), again), 0) << "exporting an exported BO pins nothing new";
	EXPECT_EQ(again, hx);
	EXPECT_EQ(c().info(z.get()).exported, 0u) << "a refused export left a handle";
	// An import pins nothing more, and works at the cap.
	auto fd = c().import(hx);
	EXPECT_EQ(a().stats().pinned_bytes, 1u << 20);
	x.reset();	// the handle dies, its pin goes
	EXPECT_EQ(a().stats().pinned_bytes, 512u << 10);
	EXPECT_EQ(c().try_export(z.get(), hz), 0) << "room again once a handle died";
	EXPECT_TRUE(write_text(pin_limit_knob, saved));
}

namespace {

const fs::path hold_export_pin = "/sys/kernel/debug/ualink_sim/hold_export_pin";

// Polls the model's count of exports held where they pin, for up to 10 s.
bool exports_held(unsigned n)
{
	for (int i = 0; i < 1000; i++) {
		if (read_text(hold_export_pin) == std::to_string(n))
			return true;
		usleep(10'000);
	}
	return false;
}

} // namespace

// An export pins its BO (up to the pod's cap: hundreds of MiB) outside the
// pod's lock. While two exports of one BO are held at their pin, other
// clients' calls go on: an import, a GEM close that ends a handle, the pod's
// counts. Then both exports get the one handle, and the BO is pinned once.
TEST_F(Model, ExportsPinningHoldUpNoOtherCall)
{
	ASSERT_TRUE(fs::exists(hold_export_pin)) << "no " << hold_export_pin;
	auto big = a().create_bo(1 << 20, vram);
	auto other = b().create_bo(4096, vram);
	handle128 h_other, h1, h2;
	ASSERT_EQ(b().try_export(other.get(), h_other), 0);
	ASSERT_TRUE(write_text(hold_export_pin, "1"));
	int rc1 = 1, rc2 = 1;
	std::thread first([&] { rc1 = a().try_export(big.get(), h1); });
	std::thread second([&] { rc2 = a().try_export(big.get(), h2); });
	const bool held = exports_held(2);
	std::atomic<bool> done{false};
	std::thread caller([&] {
		unique_fd imported = c().import(h_other);
		other.reset();	// its last handle: the export dies, its importer is revoked
		(void)b().stats();
		done = true;
	});
	for (int i = 0; i < 1000 && !done; i++)
		usleep(10'000);
	const bool went_on = done;
	EXPECT_TRUE(write_text(hold_export_pin, "0"));
	caller.join();
	first.join();
	second.join();
	EXPECT_TRUE(held) << "two exports of one BO were not both held at their pin";
	EXPECT_TRUE(went_on) << "an import, a GEM close and the pod's counts waited 10 s for another "
				"client's export to pin its BO";
	ASSERT_EQ(rc1, 0);
	ASSERT_EQ(rc2, 0);
	EXPECT_EQ(h1, h2) << "two racing exports of one BO got two handles";
	EXPECT_EQ(a().stats().pinned_bytes, 1u << 20) << "the BO is pinned once, whoever won the race";
	EXPECT_EQ(a().info(big.get()).exported, 1u);
}

// The import's dma-buf fd goes in only after DRM copied the result out: an
// unwritable argument gets EFAULT and leaves no descriptor behind.
TEST_F(Model, ImportWhoseResultCannotBeWrittenLeavesNoFd)
{
	auto bo = a().create_bo(64 << 10, vram);
	const handle128 h = a().export_bo(bo.get());
	for (const accel *im : {&b(), &a()}) {
		SCOPED_TRACE(im == &a() ? "import on the exporter" : "import on a peer");
		const size_t before = open_fds();
		EXPECT_EQ(ualink_ioctl_readonly(*im, import_request(h)), -EFAULT);
		EXPECT_EQ(open_fds(), before) << "a dma-buf fd was installed for an EFAULT";
		EXPECT_EQ(ualink_ioctl_readonly(*im, import_request(h)), -EFAULT) << "again";
		EXPECT_EQ(open_fds(), before);
		unique_fd fd;
		EXPECT_EQ(im->try_import(h, fd), 0) << "a writable argument works after";
		EXPECT_TRUE(is_dmabuf(fd.get()));
	}
}

// drm_ioctl() routes by number alone: a command for the UALink ioctl that
// copies nothing back (write-only direction) must not install an fd the
// caller never learns.
TEST_F(Model, ImportByACommandThatReturnsNothingLeavesNoFd)
{
	auto bo = a().create_bo(64 << 10, vram);
	const handle128 h = a().export_bo(bo.get());
	const unsigned long write_only =
		_IOW(DRM_IOCTL_BASE, DRM_COMMAND_BASE + DRM_AMDGPU_UALINK_HANDLE, drm_amdgpu_ualink_handle);
	for (const accel *im : {&b(), &a()}) {
		SCOPED_TRACE(im == &a() ? "import on the exporter" : "import on a peer");
		const size_t before = open_fds();
		auto arg = import_request(h);
		EXPECT_EQ(drmIoctl(im->fd(), write_only, &arg) ? -errno : 0, -EINVAL);
		EXPECT_EQ(open_fds(), before) << "an fd the caller cannot know was installed";
	}
}

// A local import hands out the BO's PRIME dma-buf: PRIME import of it in the
// exporter's file gives the file's own GEM handle (DRM's per-file cache), no
// second handle, every time; a file without a handle gets one, the same one
// each time.
TEST_F(Model, LocalImportGivesTheCallersOwnHandleBack)
{
	auto bo = a().create_bo(64 << 10, vram);
	const handle128 h = a().export_bo(bo.get());
	auto fd = a().import(h);	// no PRIME export of the BO before
	for (int i = 0; i < 2; i++) {
		uint32_t got = 0;
		ASSERT_EQ(a().try_prime_to_handle(fd.get(), got), 0);
		EXPECT_EQ(got, bo.get()) << "PRIME import " << i + 1 << " made another handle";
		if (got != bo.get())
			a().gem_close(got);
	}
	EXPECT_EQ(a().info(bo.get()).handles, 1u);
	auto own = a().prime_export(bo.get());
	EXPECT_EQ(identify(own.get()), identify(fd.get())) << "PRIME export gives the same dma-buf";

	accel a2 = a().reopen();
	auto fd2 = a2.import(h);
	EXPECT_EQ(identify(fd2.get()), identify(fd.get())) << "one dma-buf per BO";
	auto h2 = a2.prime_to_handle(fd2.get());
	uint32_t h2again = 0;
	ASSERT_EQ(a2.try_prime_to_handle(fd.get(), h2again), 0);
	EXPECT_EQ(h2again, h2.get()) << "the same dma-buf twice in one file";
	if (h2again != h2.get())
		a2.gem_close(h2again);

	// A peer's import: the same object, the same handle, every time.
	auto rfd = b().import(h);
	auto rh = b().prime_to_handle(rfd.get());
	auto rfd2 = b().import(h);
	uint32_t rh2 = 0;
	ASSERT_EQ(b().try_prime_to_handle(rfd2.get(), rh2), 0);
	EXPECT_EQ(rh2, rh.get());
	if (rh2 != rh.get())
		b().gem_close(rh2);
}

// ---------------------------------------------------------------------------
// Lifetimes: nothing outlives its holder

TEST_F(Model, SigkillOfTheHoldersReleasesEverything)
{
	int sync[2];
	ASSERT_EQ(pipe(sync), 0);
	const pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(sync[0]);
		try {
			auto all = discover();
			const auto &x = all.accels[0], &y = all.accels[1];
			auto bo = x.create_bo(64 << 10, vram);
			auto fd = y.import(x.export_bo(bo.get()));
			auto rh = y.prime_to_handle(fd.get());
			auto own = x.prime_export(bo.get());
			(void)!::write(sync[1], "x", 1);
			for (;;)
				pause();	// holding all of it until SIGKILL
		} catch (...) {
			_exit(2);
		}
	}
	close(sync[1]);
	char ch;
	ASSERT_EQ(read(sync[0], &ch, 1), 1) << "the child failed to set up";
	close(sync[0]);
	EXPECT_NE(counts(a()), base_) << "the child held nothing?";
	kill(pid, SIGKILL);
	int status;
	waitpid(pid, &status, 0);
	// Model::TearDown checks the counts are back.
}

TEST_F(Model, ConcurrentExportImportCloseResetAndOffline)
{
	const auto &accels = found_.accels;
	const accel &victim = accels.back();
	const size_t before = alarms();
	std::atomic<bool> done{false};
	std::atomic<uint64_t> ok{0}, failed{0};
	auto worker = [&](unsigned t) {
		std::mt19937 rng{t};
		for (int i = 0; i < 120; i++) {
			// New files now and then: closing a file closes its handles.
			accel ex = accels[rng() % accels.size()].reopen();
			accel im = accels[rng() % accels.size()].reopen();
			for (int j = 0; j < 4; j++) {
				gem_handle bo;
				handle128 h;
				unique_fd fd;
				if (ex.try_create_bo(4096 << (rng() % 4), vram, bo) ||
				    ex.try_export(bo.get(), h) || im.try_import(h, fd)) {
					failed++;
					continue;
				}
				uint32_t raw = 0;
				gem_handle rh;
				if (!im.try_prime_to_handle(fd.get(), raw))
					rh = gem_handle(im.fd(), raw);
				std::vector<std::byte> buf(256);
				if (rh && im.try_remote_access(rh.get(), rng() & 1, 0, buf) == 0)
					ok++;
				if (rng() & 1)
					bo.reset();	// revoke under the importer
				if (rng() & 1) {
					unique_fd again;
					im.try_import(h, again);
				}
			}
		}
	};
	std::vector<std::thread> pool;
	for (unsigned t = 0; t < 6; t++)
		pool.emplace_back(worker, t);
	std::thread chaos([&] {
		std::mt19937 rng{99};
		while (!done) {
			try {
				if (rng() & 1) {
					victim.reset_node();
				} else {
					victim.set_accel_state("error");
					usleep(500);
					victim.set_accel_state("active");
				}
			} catch (...) {
			}
			usleep(1000);
		}
	});
	for (auto &t : pool)
		t.join();
	done = true;
	chaos.join();
	RecordProperty("remote_accesses_ok", std::to_string(ok.load()));
	RecordProperty("refused_under_chaos", std::to_string(failed.load()));
	EXPECT_GT(ok.load(), 0u);
	std::string first;
	EXPECT_EQ(alarms(&first), before) << first;
}

// Dma-bufs hold the module: it cannot go while an imported object exists,
// and goes once they are gone. Reloads it afterwards.
// An import's references go with its last user, the exporter's BO still
// exported: the module's (its dma-buf's owner), the import record and the
// exporter's pin for it.
TEST(ModelModule, AnImportsReferencesGoWithItsLastUser)
{
	reset_pod();
	auto found = discover();
	ASSERT_GE(found.accels.size(), 2u);
	const accel &a = found.accels[0], &b = found.accels[1];
	auto bo = a.create_bo(8192, vram);
	const handle128 h = a.export_bo(bo.get());
	const auto refcnt = [] { return std::stoi(read_text_file("/sys/module/ualink_sim/refcnt")); };
	const int before = refcnt();
	const auto imports = a.stats().imports;
	{
		unique_fd fd = b.import(h);
		EXPECT_GT(refcnt(), before) << "a live dma-buf holds the module";
		gem_handle bh = b.prime_to_handle(fd.get());
		EXPECT_EQ(a.info(bo.get()).pins, 1u);
	}
	for (int i = 0; i < 100 && (refcnt() != before || a.stats().imports != imports); i++)
		usleep(10'000);
	EXPECT_EQ(refcnt(), before) << "the module still held after the importer's last user";
	EXPECT_EQ(a.stats().imports, imports);
	EXPECT_EQ(a.info(bo.get()).pins, 0u);
}

TEST(ModelModule, StaysWhileAnImportedDmaBufIsOpen)
{
	unique_fd held;
	{
		auto found = discover();
		ASSERT_GE(found.accels.size(), 2u);
		auto bo = found.accels[0].create_bo(8192, vram);
		held = found.accels[1].import(found.accels[0].export_bo(bo.get()));
	}	// every DRM file closed: the BO's handle count reached 0
	EXPECT_NE(syscall(SYS_delete_module, "ualink_sim", O_NONBLOCK), 0)
		<< "unloaded under an open dma-buf";
	held.reset();
	ASSERT_EQ(unload_model(), 0) << "still held after the last dma-buf closed";
	load_model();
	reset_pod();
}

// ---------------------------------------------------------------------------
// The suite checks itself

namespace {

json run_suite(const fs::path &out, std::string *output)
{
	// Never remove_all(): /run/pinmatrix is the 9p share holding the job.
	fs::create_directories(out);
	fs::remove(out / "results.json");
	const auto r = test::run_pinmatrix("run --cases ualink --case-timeout 120 --out " + out.string());
	*output = r.output;
	std::ifstream in(out / "results.json");
	if (!in)
		return json();
	return json::parse(in);
}

const json *record(const json &doc, const std::string &id)
{
	for (const auto &c : doc["cases"])
		if (c.value("id", "") == id)
			return &c;
	return nullptr;
}

} // namespace

TEST(UalinkSuite, EveryCasePassesWithNoFault)
{
	reset_pod();
	std::string output;
	const json doc = run_suite(results_dir, &output);
	ASSERT_TRUE(doc.is_object()) << output;
	EXPECT_EQ(doc["ualink"]["driver"], UALINK_SIM_DRIVER_NAME);
	EXPECT_EQ(doc["ualink"]["model_faults"], 0);
	for (const auto &def : case_table()) {
		const json *r = record(doc, def.id());
		ASSERT_NE(r, nullptr) << def.id() << " has no record";
		EXPECT_EQ((*r)["verdict"], "pass") << def.id() << ": " << r->value("reason", "");
		EXPECT_EQ((*r)["suite"], "ualink");
		EXPECT_TRUE((*r)["observed"].is_object()) << def.id();
		if (r->contains("latency_ns") && (*r)["latency_ns"].is_number())
			RecordProperty(std::string(def.name) + "_latency_ns",
				       std::to_string((*r)["latency_ns"].get<int64_t>()));
	}
	EXPECT_EQ(doc["verdict"], "pass") << output;
}

namespace pinmatrix::ualink {
// gtest prints the parameter by its name, not its bytes.
void PrintTo(const fault_def &f, std::ostream *os)
{
	*os << f.name << " (bit " << f.bit << ", caught by " << join(f.caught_by, ",") << ")";
}
} // namespace pinmatrix::ualink

class UalinkFault : public ::testing::TestWithParam<fault_def> {};

// Every case the mutant table names for the bit FAILs with it on; the
// others that did not pass are recorded (a bit may break more than it names).
TEST_P(UalinkFault, IsCaughtByItsCases)
{
	const fault_def &f = GetParam();
	reset_pod();
	set_model_faults(f.bit);
	std::string output;
	const json doc = run_suite(results_dir / "faults" / std::string(f.name), &output);
	reset_pod();	// clears the bit and whatever the deviation left behind
	ASSERT_TRUE(doc.is_object()) << output;
	EXPECT_EQ(doc["ualink"]["model_faults"], f.bit);
	ASSERT_FALSE(f.caught_by.empty()) << f.name << " names no case";
	std::string reasons;
	for (const auto id : f.caught_by) {
		const json *r = record(doc, std::string(id));
		ASSERT_NE(r, nullptr) << id;
		EXPECT_EQ((*r)["verdict"], "fail") << f.name << " (" << f.deviation << ") was not caught by " << id
						   << ": " << (*r)["verdict"] << " " << r->value("reason", "");
		reasons += (reasons.empty() ? "" : " | ") + std::string(id) + ": " + r->value("reason", "");
	}
	std::string also;
	for (const auto &c : doc["cases"])
		if (c["verdict"] != "pass" &&
		    std::find(f.caught_by.begin(), f.caught_by.end(), c["id"].get<std::string>()) == f.caught_by.end())
			also += (also.empty() ? "" : ",") + c["id"].get<std::string>();
	RecordProperty("caught_by", join(f.caught_by, ","));
	RecordProperty("reason", reasons);
	RecordProperty("also_failed", also);
}

INSTANTIATE_TEST_SUITE_P(EachBit, UalinkFault, ::testing::ValuesIn(fault_table()),
			 [](const ::testing::TestParamInfo<fault_def> &i) {
				 std::string n(i.param.name);
				 std::replace(n.begin(), n.end(), '-', '_');
				 return n;
			 });
