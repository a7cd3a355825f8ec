// SPDX-License-Identifier: GPL-2.0
// kmod/pinmatrix in a guest: its ioctls, its bad-input answers, and the
// promise that every pin goes when its holder does (also on SIGKILL).
// Runs as root inside `pinmatrix vm --guest-cmd`; loads the module from
// $PINMATRIX_MODULE when /dev/pinmatrix is absent.

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "capability.hpp"
#include "foll_flags.hpp"
#include "kernel_info.hpp"
#include "kernel_log.hpp"
#include "mapping.hpp"
#include "pin_module.hpp"
#include "placement.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"

using namespace pinmatrix;

namespace {

constexpr size_t pages_held = 64;

int64_t pins_outstanding_now()
{
	auto v = read_vmstat();
	return int64_t(v["nr_foll_pin_acquired"]) - int64_t(v["nr_foll_pin_released"]);
}

// FOLL_PIN pins held system-wide, once no one else's are in flight. From
// 6.x, 9p pins the user pages of a write while it runs (netfs and
// iov_iter_extract_pages): the guest's `tee` of this test's own output to
// the 9p results share comes and goes with a pin of its own. Read until
// three reads 20 ms apart agree (at most 2 s), then the count is ours.
int64_t pins_outstanding()
{
	int64_t last = pins_outstanding_now();
	for (int same = 0, tries = 0; same < 2 && tries < 100; tries++) {
		usleep(20000);
		const int64_t now = pins_outstanding_now();
		same = now == last ? same + 1 : 0;
		last = now;
	}
	return last;
}

class ModuleEnvironment : public ::testing::Environment {
public:
	void SetUp() override
	{
		if (std::filesystem::exists(default_device_path))
			return;
		const char *ko = std::getenv("PINMATRIX_MODULE");
		ASSERT_NE(ko, nullptr) << "set PINMATRIX_MODULE or load pinmatrix.ko";
		unique_fd fd(::open(ko, O_RDONLY | O_CLOEXEC));
		ASSERT_TRUE(fd) << ko;
		ASSERT_EQ(syscall(SYS_finit_module, fd.get(), "", 0), 0) << strerror(errno);
		for (int i = 0; i < 100 && !std::filesystem::exists(default_device_path); i++)
			usleep(10'000);
	}

	// Whatever the tests did, the kernel must not have complained.
	void TearDown() override
	{
		const auto alarms = kernel_alarms(read_kernel_log());
		EXPECT_TRUE(alarms.empty()) << "kernel log: " << alarms.front();
	}
};

const auto *env = ::testing::AddGlobalTestEnvironment(new ModuleEnvironment);

class Module : public ::testing::Test {
protected:
	pin_module module = pin_module::open();
	mapping pages = populated_pages(pages_held * page_size());
};

template <typename T> int raw_ioctl(const pin_module &m, unsigned long req, T &arg)
{
	return ::ioctl(m.fd(), req, &arg) ? errno : 0;
}

} // namespace

TEST_F(Module, InfoReportsAbiAndMethod)
{
	auto info = module.info();
	EXPECT_EQ(info.abi_version, unsigned(PINMATRIX_ABI_VERSION));
	EXPECT_EQ(info.page_size, page_size());
	EXPECT_EQ(info.mt_method, unsigned(PINMATRIX_MT_METHOD_PAGEBLOCK_BITMAP));
	EXPECT_EQ(info.pinned_pages, 0u);
}

// The FOLL_* values of the headers the module was built against: one bit
// each, distinct; where the kernel's BTF has them too (FOLL_* an enum), the
// same. The trace's gup_flags are decoded by these (lib/diagnosis/foll_flags).
TEST_F(Module, InfoReportsThisKernelsFollValues)
{
	const auto info = module.info();
	uint32_t seen = 0;
	for (int i : {PINMATRIX_FOLL_WRITE, PINMATRIX_FOLL_GET, PINMATRIX_FOLL_FORCE, PINMATRIX_FOLL_LONGTERM}) {
		const uint32_t v = info.foll[i];
		EXPECT_NE(v, 0u) << "slot " << i;
		EXPECT_EQ(v & (v - 1), 0u) << "slot " << i << ": one bit";
		EXPECT_EQ(seen & v, 0u) << "slot " << i << ": a bit another flag has";
		seen |= v;
	}
	const foll_table t = running_foll_table();
	ASSERT_FALSE(t.bits.empty()) << "neither the BTF nor the module gave FOLL_* values";
	const char *const names[] = {"FOLL_WRITE", "FOLL_GET", "FOLL_FORCE", "FOLL_LONGTERM", "FOLL_PIN"};
	for (int i = 0; i < 5; i++)
		if (info.foll[i] && t.value_of(names[i])) {
			EXPECT_EQ(*t.value_of(names[i]), info.foll[i]) << names[i] << ": BTF and headers disagree";
		}
	EXPECT_EQ(t.longterm(info.foll[PINMATRIX_FOLL_LONGTERM]), true) << t.source;
}

TEST_F(Module, ProbeDescribesPresentPages)
{
	auto probed = module.probe(pages.addr(), pages_held);
	ASSERT_EQ(probed.size(), pages_held);
	for (const auto &p : probed) {
		EXPECT_TRUE(p.flags & PINMATRIX_PAGE_PRESENT);
		EXPECT_TRUE(p.flags & PINMATRIX_PAGE_MT_KNOWN);
		EXPECT_NE(p.pfn, 0u);
		EXPECT_NE(p.zone, PINMATRIX_ZONE_UNKNOWN);
		EXPECT_FALSE(p.flags & PINMATRIX_PAGE_MAYBE_DMA_PINNED);
		// A long-term pin may stay exactly where the page is not movable.
		EXPECT_TRUE(p.flags & PINMATRIX_PAGE_PINNABLE_KNOWN);
		EXPECT_EQ(bool(p.flags & PINMATRIX_PAGE_LONGTERM_PINNABLE),
			  p.zone != PINMATRIX_ZONE_MOVABLE && p.migratetype != PINMATRIX_MT_CMA);
	}
}

TEST_F(Module, ProbeReportsAbsentAndZeroPages)
{
	mapping untouched = mapping::anonymous(4 * page_size(), false);
	// 4 KiB PTEs: a read fault in a THP region maps the huge zero page.
	ASSERT_NO_THROW(untouched.keep_base_pages());
	volatile std::byte read = untouched.data()[page_size()]; // maps the zero page
	(void)read;
	auto probed = module.probe(untouched.addr(), 4);
	EXPECT_FALSE(probed[0].flags & PINMATRIX_PAGE_PRESENT);
	EXPECT_TRUE(probed[1].flags & PINMATRIX_PAGE_ZERO);
	EXPECT_TRUE(probed[1].flags & PINMATRIX_PAGE_PINNABLE_KNOWN);
	EXPECT_TRUE(probed[1].flags & PINMATRIX_PAGE_LONGTERM_PINNABLE);
	EXPECT_FALSE(probed[2].flags & PINMATRIX_PAGE_PRESENT);
	// pin_module fills absent pages from pagemap: the module alone, page by
	// page through GUP, must say the same.
	std::vector<pinmatrix_page> raw(4);
	pinmatrix_probe req{};
	req.size = sizeof(req);
	req.addr = untouched.addr();
	req.npages = raw.size();
	req.pages = reinterpret_cast<uintptr_t>(raw.data());
	ASSERT_EQ(raw_ioctl(module, PINMATRIX_IOC_PROBE, req), 0);
	for (size_t i = 0; i < raw.size(); i++) {
		SCOPED_TRACE(i);
		EXPECT_EQ(raw[i].flags, probed[i].flags);
		EXPECT_EQ(raw[i].pfn, probed[i].pfn);
		EXPECT_EQ(raw[i].zone, probed[i].zone);
		EXPECT_EQ(raw[i].migratetype, probed[i].migratetype);
	}
	auto faulted = module.probe(untouched.addr(), 4, PINMATRIX_PROBE_FAULT);
	EXPECT_TRUE(faulted[3].flags & PINMATRIX_PAGE_PRESENT);
}

TEST_F(Module, AZeroPagePinIsWhatItsFlagSays)
{
	mapping untouched = mapping::anonymous(page_size(), false);
	ASSERT_NO_THROW(untouched.keep_base_pages());
	volatile std::byte read = untouched.data()[0]; // maps the zero page
	(void)read;
	const auto zero = module.probe_one(untouched.addr());
	ASSERT_TRUE(zero.flags & PINMATRIX_PAGE_ZERO);
	// FOLL_PIN skips the zero page from 6.5 (and in kernels with the backport).
	const bool not_pinned = zero.flags & PINMATRIX_PAGE_ZERO_NOT_PINNED;
	const int64_t outstanding = pins_outstanding();
	held_pin pin = module.pin(PINMATRIX_CONTRACT_FOLL_PIN, untouched.addr(), 1, 0);
	EXPECT_EQ(pin.pfns()[0], zero.pfn);
	EXPECT_EQ(pins_outstanding(), outstanding + (not_pinned ? 0 : 1));
	EXPECT_EQ(bool(module.probe_one(untouched.addr()).flags & PINMATRIX_PAGE_MAYBE_DMA_PINNED), !not_pinned);
	EXPECT_EQ(pin.release(), 0);
	EXPECT_EQ(pins_outstanding(), outstanding);
}

TEST_F(Module, EachContractPinsListsAndUnpins)
{
	for (auto contract : {PINMATRIX_CONTRACT_GUP_REF, PINMATRIX_CONTRACT_FOLL_PIN,
			      PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM}) {
		SCOPED_TRACE(contract_name(contract));
		const int64_t outstanding = pins_outstanding();
		held_pin pin = module.pin(contract, pages.addr(), pages_held);
		EXPECT_GT(pin.id(), 0u);
		auto probed = module.probe(pages.addr(), pages_held);
		for (size_t i = 0; i < pages_held; i++) {
			EXPECT_EQ(pin.pfns()[i], probed[i].pfn);
			// FOLL_GET is a plain reference: not visible as a DMA pin.
			EXPECT_EQ(bool(probed[i].flags & PINMATRIX_PAGE_MAYBE_DMA_PINNED),
				  contract != PINMATRIX_CONTRACT_GUP_REF);
			if (contract == PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM) {
				EXPECT_TRUE(probed[i].flags & PINMATRIX_PAGE_LONGTERM_PINNABLE);
			}
		}
		auto list = module.list();
		ASSERT_EQ(list.size(), 1u);
		EXPECT_EQ(list[0].id, pin.id());
		EXPECT_EQ(list[0].contract, unsigned(contract));
		EXPECT_EQ(list[0].npages, pages_held);
		EXPECT_EQ(module.info().pinned_pages, pages_held);
		if (contract != PINMATRIX_CONTRACT_GUP_REF) {
			EXPECT_EQ(pins_outstanding(), outstanding + int64_t(pages_held));
		}
		EXPECT_EQ(pin.release(), 0);
		EXPECT_TRUE(module.list().empty());
		EXPECT_EQ(pins_outstanding(), outstanding);
	}
}

TEST_F(Module, LongTermPinMovesAMovablePageOut)
{
	auto found = find_page(module, placement::movable, 64 << 20);
	if (!found)
		GTEST_SKIP() << "no ZONE_MOVABLE page (boot with movablecore=)";
	held_pin pin = module.pin(PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM, found->map.addr(), 1);
	auto after = module.probe_one(found->map.addr());
	EXPECT_NE(after.pfn, found->page.pfn);
	EXPECT_EQ(after.pfn, pin.pfns()[0]);
	EXPECT_NE(after.zone, PINMATRIX_ZONE_MOVABLE);
}

namespace {

// Two pages side by side in one range: an ordinary page then a ZONE_MOVABLE
// one (each found, then moved into place by mremap(), which keeps the
// page). Unmapped when it goes.
struct ordinary_then_movable {
	void *base = MAP_FAILED;
	~ordinary_then_movable()
	{
		if (base != MAP_FAILED)
			munmap(base, 2 * page_size());
	}
};

bool place(found_page &f, void *at)
{
	void *old = f.map.data();
	if (mremap(old, page_size(), page_size(), MREMAP_MAYMOVE | MREMAP_FIXED, at) != at)
		return false;
	// At once, before anything else is mapped where it was: the mapping
	// lets go of its old range (now empty) and will unmap nothing.
	f.map.trim_to(0, 0);
	return true;
}

} // namespace

// GUP-fast pins the ordinary page and stops at the one it may not pin
// long-term in place; pin_user_pages_fast() returns that short count. The
// PIN asks again from there, as ib_umem_get() does, and returns the
// kernel's errno for that page (ENOMEM: a held FOLL_PIN blocks its
// migration) with its index, not a short count's EFAULT.
TEST_F(Module, APinWhoseLastPageCannotMoveIsENOMEMAtThatPage)
{
	auto movable = find_page(module, placement::movable, 64 << 20);
	if (!movable)
		GTEST_SKIP() << "no ZONE_MOVABLE page (boot with movablecore=)";
	// Movable allocations take ZONE_MOVABLE first: an ordinary page comes
	// once it is full (what the page finder faults in, it gives back).
	auto ordinary = find_page(module, placement::ordinary, size_t(2048) << 20);
	ASSERT_TRUE(ordinary) << "no ordinary page";
	ordinary_then_movable range;
	range.base = mmap(nullptr, 2 * page_size(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(range.base, MAP_FAILED);
	auto *second = static_cast<std::byte *>(range.base) + page_size();
	ASSERT_TRUE(place(*ordinary, range.base)) << strerror(errno);
	ASSERT_TRUE(place(*movable, second)) << strerror(errno);
	ASSERT_EQ(module.probe_one(uintptr_t(second)).pfn, movable->page.pfn);
	const int64_t outstanding = pins_outstanding();

	held_pin blocking = module.pin(PINMATRIX_CONTRACT_FOLL_PIN, uintptr_t(second), 1);
	std::vector<uint64_t> pfns(2);
	pinmatrix_pin p{};
	p.size = sizeof(p);
	p.contract = PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM;
	p.addr = uintptr_t(range.base);
	p.npages = 2;
	p.pfns = uintptr_t(pfns.data());
	p.pinned = ~0ULL;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), ENOMEM);
	EXPECT_EQ(p.pinned, 1u) << "the page the PIN stopped at";
	EXPECT_EQ(module.list().size(), 1u) << "nothing of the refused PIN is kept";
	EXPECT_EQ(module.probe_one(uintptr_t(second)).pfn, movable->page.pfn) << "the blocked page moved";

	// Once the short-term pin goes, the same PIN moves the page and holds both.
	EXPECT_EQ(blocking.release(), 0);
	p.pinned = 0;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), 0);
	EXPECT_EQ(p.pinned, 2u);
	EXPECT_NE(pfns[1], movable->page.pfn);
	EXPECT_EQ(module.try_unpin(p.id), 0);
	EXPECT_EQ(pins_outstanding(), outstanding);
}

TEST_F(Module, BadArgumentsAreRefusedAndLeakNothing)
{
	const int64_t outstanding = pins_outstanding();
	std::vector<uint64_t> pfns(pages_held);
	auto pin_req = [&] {
		pinmatrix_pin p{};
		p.size = sizeof(p);
		p.contract = PINMATRIX_CONTRACT_FOLL_PIN;
		p.addr = pages.addr();
		p.npages = pages_held;
		p.pfns = reinterpret_cast<uintptr_t>(pfns.data());
		return p;
	};
	auto p = pin_req();
	p.size = sizeof(p) - 8;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EINVAL);
	p = pin_req();
	p.contract = 0;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EINVAL);
	p = pin_req();
	p.contract = 99;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EINVAL);
	p = pin_req();
	p.flags = 0x80;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EINVAL);
	p = pin_req();
	p.addr += 1;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EINVAL);
	p = pin_req();
	p.npages = 0;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EINVAL);
	p = pin_req();
	p.npages = ~0ULL;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EINVAL);
	p = pin_req();
	p.addr = 0xffff800000000000ULL; // kernel half
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EFAULT);
	p = pin_req();
	p.pfns = 0x10; // unmapped output: the pages must be given back
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EFAULT);

	// A range that ends in an unmapped hole pins nothing at all.
	mapping hole = populated_pages(4 * page_size());
	hole.trim_to(0, 2 * page_size());
	p = pin_req();
	p.addr = hole.addr();
	p.npages = 4;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EFAULT);

	// Read-only memory cannot be pinned for write.
	void *ro = mmap(nullptr, page_size(), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(ro, MAP_FAILED);
	p = pin_req();
	p.addr = reinterpret_cast<uintptr_t>(ro);
	p.npages = 1;
	p.flags = PINMATRIX_PIN_WRITE;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EFAULT);
	munmap(ro, page_size());

	pinmatrix_unpin u{sizeof(u), 12345};
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_UNPIN, u), ENOENT);
	u.id = 0;
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_UNPIN, u), ENOENT);
	pinmatrix_probe pr{sizeof(pr), 0, pages.addr(), 0, 0};
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PROBE, pr), EINVAL);
	pr = {sizeof(pr), 0x100, pages.addr(), 1, 0};
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PROBE, pr), EINVAL);
	pr = {sizeof(pr), 0, pages.addr(), 1, 0x10};
	EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PROBE, pr), EFAULT);
	int dummy = 0;
	EXPECT_EQ(::ioctl(module.fd(), _IO(PINMATRIX_IOC_MAGIC, 0x7f), &dummy) ? errno : 0, ENOTTY);
	EXPECT_EQ(::ioctl(module.fd(), PINMATRIX_IOC_PIN, nullptr) ? errno : 0, EFAULT);

	EXPECT_TRUE(module.list().empty());
	EXPECT_EQ(module.info().pinned_pages, 0u);
	EXPECT_EQ(pins_outstanding(), outstanding);
}

// PINMATRIX_PIN_LOCK holds each folio's lock until the pin goes: a second
// LOCK of a page is -EBUSY and leaves nothing behind, a file page is
// refused, and once the first is released the pages lock again.
TEST_F(Module, ALockingPinHoldsItsFoliosUntilReleased)
{
	constexpr uint32_t lock = PINMATRIX_PIN_WRITE | PINMATRIX_PIN_LOCK;
	held_pin first = module.pin(PINMATRIX_CONTRACT_GUP_REF, pages.addr(), pages_held, lock);
	held_pin second;
	EXPECT_EQ(module.try_pin(PINMATRIX_CONTRACT_FOLL_PIN, pages.addr() + (pages_held - 1) * page_size(), 1,
				 lock, second),
		  -EBUSY);
	EXPECT_EQ(module.list().size(), 1u);
	EXPECT_EQ(module.info().pinned_pages, pages_held);
	// Without LOCK the same pages pin as ever.
	held_pin plain = module.pin(PINMATRIX_CONTRACT_FOLL_PIN, pages.addr(), 1);
	EXPECT_EQ(first.release(), 0);
	EXPECT_EQ(module.try_pin(PINMATRIX_CONTRACT_FOLL_PIN, pages.addr(), pages_held, lock, second), 0);
	{
		pin_module other = pin_module::open();
		held_pin busy;
		EXPECT_EQ(other.try_pin(PINMATRIX_CONTRACT_GUP_REF, pages.addr(), 1, lock, busy), -EBUSY);
	}
	EXPECT_EQ(second.release(), 0);
	held_pin again = module.pin(PINMATRIX_CONTRACT_GUP_REF, pages.addr(), pages_held, lock);
	EXPECT_TRUE(again);
}

// The locks go by themselves after lock_max_ms, the pin stays: a migration
// that waits for them (uninterruptibly) is never stranded.
TEST_F(Module, ALockingPinsLocksGoByThemselvesAfterLockMaxMs)
{
	const std::string param = "/sys/module/pinmatrix/parameters/lock_max_ms";
	std::string before;
	std::ifstream(param) >> before;
	ASSERT_FALSE(before.empty()) << param;
	std::ofstream(param) << "200";
	constexpr uint32_t lock = PINMATRIX_PIN_WRITE | PINMATRIX_PIN_LOCK;
	held_pin first = module.pin(PINMATRIX_CONTRACT_GUP_REF, pages.addr(), pages_held, lock);
	std::this_thread::sleep_for(std::chrono::milliseconds(1000));
	held_pin second;
	const int ret = module.try_pin(PINMATRIX_CONTRACT_GUP_REF, pages.addr(), pages_held, lock, second);
	std::ofstream(param) << before;
	EXPECT_EQ(ret, 0) << "the first pin's locks were still held after lock_max_ms";
	EXPECT_EQ(module.list().size(), 2u);
	EXPECT_EQ(first.release(), 0);
	EXPECT_EQ(second.release(), 0);
}

TEST_F(Module, ALockingPinOfAFilePageIsEINVAL)
{
	unique_fd memfd(memfd_create("pinmatrix-lock", MFD_CLOEXEC));
	ASSERT_TRUE(memfd) << errno;
	ASSERT_EQ(ftruncate(memfd.get(), page_size()), 0);
	mapping file = mapping::map(page_size(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, memfd.get());
	held_pin pin;
	EXPECT_EQ(module.try_pin(PINMATRIX_CONTRACT_GUP_REF, file.addr(), 1, PINMATRIX_PIN_WRITE | PINMATRIX_PIN_LOCK,
				 pin),
		  -EINVAL);
	EXPECT_TRUE(module.list().empty());
	EXPECT_EQ(module.info().pinned_pages, 0u);
}

TEST_F(Module, DoubleUnpinIsENOENT)
{
	held_pin pin = module.pin(PINMATRIX_CONTRACT_FOLL_PIN, pages.addr(), 1);
	const uint32_t id = pin.id();
	EXPECT_EQ(pin.release(), 0);
	EXPECT_EQ(module.try_unpin(id), -ENOENT);
}

TEST_F(Module, PerFileCapIsENOSPC)
{
	const std::string param = "/sys/module/pinmatrix/parameters/max_pinned_pages";
	std::string old;
	std::ifstream(param) >> old;
	std::ofstream(param) << 8 << std::flush;
	held_pin a;
	EXPECT_EQ(module.try_pin(PINMATRIX_CONTRACT_FOLL_PIN, pages.addr(), 8, 0, a), 0);
	held_pin b;
	EXPECT_EQ(module.try_pin(PINMATRIX_CONTRACT_FOLL_PIN, pages.addr(), 1, 0, b), -ENOSPC);
	std::ofstream(param) << old << std::flush;
}

TEST_F(Module, PinsOfOneFileAreNotAnothers)
{
	pin_module other = pin_module::open();
	held_pin pin = module.pin(PINMATRIX_CONTRACT_FOLL_PIN, pages.addr(), 1);
	EXPECT_TRUE(other.list().empty());
	EXPECT_EQ(other.try_unpin(pin.id()), -ENOENT);
	EXPECT_EQ(module.list().size(), 1u);
}

TEST_F(Module, NotForUnprivilegedUsers)
{
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(3);
		int fd = ::open(default_device_path, O_RDWR);
		_exit(fd < 0 && (errno == EACCES || errno == EPERM) ? 0 : 1);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0) << "an unprivileged process opened " << default_device_path;
}

// The must-show of the matrix issue: a killed holder leaves no pin behind.
TEST(ModuleLifetime, SigkillOfTheHolderReleasesEveryPin)
{
	const int64_t outstanding = pins_outstanding();
	int ready[2];
	ASSERT_EQ(pipe(ready), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		try {
			auto m = pin_module::open();
			auto buf = populated_pages(3 * pages_held * page_size());
			// One pin per contract, held until the process dies.
			static held_pin held[3];
			held[0] = m.pin(PINMATRIX_CONTRACT_GUP_REF, buf.addr(), pages_held);
			held[1] = m.pin(PINMATRIX_CONTRACT_FOLL_PIN, buf.addr() + pages_held * page_size(),
					pages_held);
			held[2] = m.pin(PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM,
					buf.addr() + 2 * pages_held * page_size(), pages_held);
			char ok = 'y';
			if (write(ready[1], &ok, 1) != 1)
				_exit(2);
			for (;;)
				pause();
		} catch (...) {
			_exit(1);
		}
	}
	close(ready[1]);
	char ok = 0;
	ASSERT_EQ(read(ready[0], &ok, 1), 1) << "holder could not pin";
	close(ready[0]);
	EXPECT_EQ(pins_outstanding(), outstanding + 2 * int64_t(pages_held));
	ASSERT_EQ(kill(pid, SIGKILL), 0);
	int status = 0;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(pins_outstanding(), outstanding);
	auto v = read_vmstat();
	if (outstanding == 0) {
		EXPECT_EQ(v["nr_foll_pin_acquired"], v["nr_foll_pin_released"]);
	}
}

// Unloading (issue 8): the module cannot go while a file of it holds pins
// (the file's reference on the module, fops.owner), and goes cleanly once
// they are released. Each test loads it again for whatever runs next.
namespace {

const char *const module_dir = "/sys/module/pinmatrix";
const char *const stall_param = "/sys/module/pinmatrix/parameters/stall_pin_until_killed";

// delete_module(2) as rmmod calls it: 0 or errno. A module in use answers
// EWOULDBLOCK (kernel/module/main.c, try_stop_module()).
int unload_module()
{
	return syscall(SYS_delete_module, "pinmatrix", O_NONBLOCK) ? errno : 0;
}

std::string read_first_line(const std::string &path)
{
	std::string s;
	std::ifstream(path) >> s;
	return s;
}

// Puts the module back after a test, whatever the test did.
class reload_afterwards {
public:
	explicit reload_afterwards(std::string ko) : ko_(std::move(ko)) {}
	reload_afterwards(const reload_afterwards &) = delete;
	reload_afterwards &operator=(const reload_afterwards &) = delete;
	~reload_afterwards()
	{
		if (std::filesystem::exists(module_dir))
			return;
		unique_fd fd(::open(ko_.c_str(), O_RDONLY | O_CLOEXEC));
		EXPECT_TRUE(fd) << ko_;
		EXPECT_EQ(syscall(SYS_finit_module, fd.get(), "", 0), 0) << strerror(errno);
		for (int i = 0; i < 100 && !std::filesystem::exists(default_device_path); i++)
			usleep(10'000);
	}

private:
	std::string ko_;
};

// A child process, SIGKILLed and reaped if a test ends before it did.
struct child_process {
	pid_t pid = -1;
	child_process() = default;
	child_process(const child_process &) = delete;
	child_process &operator=(const child_process &) = delete;
	~child_process()
	{
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
		}
	}
};

} // namespace

TEST(ModuleUnload, RefusedWhilePinsAreHeldThenCleanOnceReleased)
{
	const char *ko = std::getenv("PINMATRIX_MODULE");
	if (!ko)
		GTEST_SKIP() << "PINMATRIX_MODULE is not set: the module could not be loaded again";
	reload_afterwards reload(ko);
	const int64_t outstanding = pins_outstanding();
	{
		pin_module m = pin_module::open();
		mapping buf = populated_pages(pages_held * page_size());
		held_pin pin = m.pin(PINMATRIX_CONTRACT_FOLL_PIN, buf.addr(), pages_held);
		EXPECT_EQ(read_first_line(std::string(module_dir) + "/refcnt"), "1");
		EXPECT_EQ(unload_module(), EWOULDBLOCK);
		EXPECT_NE(system("rmmod pinmatrix 2>/dev/null"), 0);
		// Refused, and nothing was taken away from the holder.
		EXPECT_TRUE(std::filesystem::exists(module_dir));
		EXPECT_EQ(m.list().size(), 1u);
		EXPECT_EQ(m.info().pinned_pages, pages_held);
		EXPECT_EQ(pins_outstanding(), outstanding + int64_t(pages_held));
	}
	EXPECT_EQ(pins_outstanding(), outstanding);
	EXPECT_EQ(read_first_line(std::string(module_dir) + "/refcnt"), "0");
	ASSERT_EQ(unload_module(), 0) << strerror(errno);
	EXPECT_FALSE(std::filesystem::exists(module_dir));
	EXPECT_FALSE(std::filesystem::exists(default_device_path));
	auto v = read_vmstat();
	if (outstanding == 0) {
		EXPECT_EQ(v["nr_foll_pin_acquired"], v["nr_foll_pin_released"]);
	}
}

// A pin stuck in the kernel (the fault the runner injects for
// --fault kernel-hang-at) retries as a long-term pin that never gives up
// does: it gives its pages back and takes them again on every pass, and
// holds the module, until SIGKILL ends it and releases both.
TEST(ModuleUnload, APinStuckInTheKernelHoldsTheModuleUntilKilled)
{
	const char *ko = std::getenv("PINMATRIX_MODULE");
	if (!ko)
		GTEST_SKIP() << "PINMATRIX_MODULE is not set: the module could not be loaded again";
	ASSERT_TRUE(std::filesystem::exists(stall_param));
	reload_afterwards reload(ko);
	const int64_t outstanding = pins_outstanding();
	std::ofstream(stall_param) << "Y" << std::flush;
	struct stall_off {
		~stall_off() { std::ofstream(stall_param) << "N" << std::flush; }
	} off;
	child_process child;
	const pid_t pid = child.pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		try {
			auto m = pin_module::open();
			auto buf = populated_pages(pages_held * page_size());
			held_pin pin = m.pin(PINMATRIX_CONTRACT_FOLL_PIN, buf.addr(), pages_held);
		} catch (...) {
		}
		_exit(1); // never reached while the stall works
	}
	// Stuck: the task sleeps in the kernel between its passes, and runs
	// for the moment each pass takes its pages again: a single look may
	// find it running, so it is watched until it sleeps (10 s at most).
	const auto sleeps_again = [pid] {
		for (int i = 0; i < 1000; i++) {
			if (read_task_state(pid).state == "D")
				return true;
			usleep(10'000);
		}
		return false;
	};
	EXPECT_TRUE(sleeps_again()) << "state " << read_task_state(pid).state;
	std::ofstream(stall_param) << "N" << std::flush; // only that one pin stalls
	const std::string stack = read_text_file("/proc/" + std::to_string(pid) + "/stack");
	EXPECT_NE(stack.find("pm_stall_until_killed"), std::string::npos) << stack;
	// Each pass unpins and pins again: pages_held more releases a pass.
	const auto released = [] { return int64_t(read_vmstat()["nr_foll_pin_released"]); };
	const int64_t before = released();
	usleep(500'000);
	EXPECT_GE(released() - before, int64_t(pages_held)) << "no pass gave its pages back";
	// A signal that does not kill it does not end it.
	ASSERT_EQ(kill(pid, SIGSTOP), 0);
	ASSERT_EQ(kill(pid, SIGCONT), 0);
	usleep(100'000);
	int no_status = 0;
	EXPECT_EQ(waitpid(pid, &no_status, WNOHANG), 0) << "SIGSTOP and SIGCONT ended the pin";
	EXPECT_TRUE(sleeps_again()) << "state " << read_task_state(pid).state;
	EXPECT_EQ(unload_module(), EWOULDBLOCK);

	ASSERT_EQ(kill(pid, SIGKILL), 0);
	int status = 0;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	child.pid = -1;
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	EXPECT_EQ(pins_outstanding(), outstanding);
	ASSERT_EQ(unload_module(), 0) << strerror(errno);
	EXPECT_FALSE(std::filesystem::exists(module_dir));
}

// Memlock accounting (issue 13, item 9; issue 31, part 5): a long-term pin
// is charged to the pinning process's mm->pinned_vm (VmPin) as
// ib_umem_get() charges a registration, refused past RLIMIT_MEMLOCK without
// CAP_IPC_LOCK (ENOMEM), and uncharged when it is released (UNPIN or the
// last close); short-term pins and references are not charged.
namespace {

// VmPin of /proc/self/status, in kB; -1 when absent.
long vm_pin_kb()
{
	const std::string status = read_text_file("/proc/self/status");
	const auto at = status.find("\nVmPin:");
	return at == std::string::npos ? -1 : std::strtol(status.c_str() + at + 7, nullptr, 10);
}

long pages_kb(size_t n)
{
	return long(n * page_size() / 1024);
}

// RLIMIT_MEMLOCK (soft) of n pages; 0 or -errno.
int set_memlock_pages(size_t n)
{
	rlimit r{};
	if (getrlimit(RLIMIT_MEMLOCK, &r))
		return -errno;
	r.rlim_cur = n * page_size();
	return setrlimit(RLIMIT_MEMLOCK, &r) ? -errno : 0;
}

// PINMATRIX_IOC_PIN on a raw fd: the id, or -errno.
long raw_pin(int fd, uint32_t contract, uintptr_t addr, size_t npages)
{
	std::vector<uint64_t> pfns(npages);
	pinmatrix_pin p{};
	p.size = sizeof(p);
	p.contract = contract;
	p.addr = addr;
	p.npages = npages;
	p.pfns = reinterpret_cast<uintptr_t>(pfns.data());
	return ::ioctl(fd, PINMATRIX_IOC_PIN, &p) ? -errno : long(p.id);
}

// Waits up to ms for pid to end: its wait status, or -1 if it still runs.
int reap_within(pid_t pid, int ms)
{
	for (int waited = 0; waited <= ms; waited += 10) {
		int status = 0;
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(10'000);
	}
	return -1;
}

// What a child's exit code means, for the assertion message.
std::string child_step(int status, const std::map<int, const char *> &steps)
{
	if (!WIFEXITED(status))
		return "the child ended by signal " + std::to_string(WTERMSIG(status));
	const auto it = steps.find(WEXITSTATUS(status));
	return it == steps.end() ? "exit " + std::to_string(WEXITSTATUS(status)) : it->second;
}

} // namespace

// A long-term pin is charged as ib_umem_get() charges a registration; a
// short-term pin and a reference are not, as no kernel pinner of those
// charges them (nor the GPU host pin they stand for): an ENOMEM of a
// registration after them is then the kernel's, not the module's charge.
TEST_F(Module, ALongTermPinIsChargedToVmPinUntilReleasedOthersAreNot)
{
	const long base = vm_pin_kb();
	ASSERT_GE(base, 0) << "no VmPin in /proc/self/status";
	held_pin pin = module.pin(PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM, pages.addr(), pages_held);
	EXPECT_EQ(vm_pin_kb(), base + pages_kb(pages_held));
	held_pin more = module.pin(PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM, pages.addr(), 3);
	EXPECT_EQ(vm_pin_kb(), base + pages_kb(pages_held + 3));
	EXPECT_EQ(pin.release(), 0);
	EXPECT_EQ(vm_pin_kb(), base + pages_kb(3));
	EXPECT_EQ(more.release(), 0);
	EXPECT_EQ(vm_pin_kb(), base);
	for (auto contract : {PINMATRIX_CONTRACT_GUP_REF, PINMATRIX_CONTRACT_FOLL_PIN}) {
		SCOPED_TRACE(contract_name(contract));
		held_pin short_term = module.pin(contract, pages.addr(), pages_held);
		EXPECT_EQ(vm_pin_kb(), base);
	}
	// A refused or failed pin leaves no charge behind.
	mapping hole = populated_pages(4 * page_size());
	hole.trim_to(0, 2 * page_size());
	held_pin none;
	EXPECT_EQ(module.try_pin(PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM, hole.addr(), 4, 0, none), -EFAULT);
	EXPECT_EQ(vm_pin_kb(), base);
	// The last close releases what the file still holds, and uncharges it.
	int fd = ::open(default_device_path, O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	EXPECT_GT(raw_pin(fd, PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM, pages.addr(), pages_held), 0);
	EXPECT_GT(raw_pin(fd, PINMATRIX_CONTRACT_GUP_REF, pages.addr(), 5), 0);
	EXPECT_EQ(vm_pin_kb(), base + pages_kb(pages_held));
	close(fd);
	EXPECT_EQ(vm_pin_kb(), base);
}

TEST(ModuleMemlock, ALongTermPinPastRlimitMemlockWithoutCapIpcLockIsENOMEM)
{
	const pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		try {
			auto m = pin_module::open();
			auto buf = populated_pages(16 * page_size());
			if (set_memlock_pages(8))
				_exit(10);
			held_pin a;
			constexpr auto longterm = PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM;
			// CAP_IPC_LOCK (root) may pin past the limit, as ib_umem_get() may.
			if (m.try_pin(longterm, buf.addr(), 12, 0, a) || a.release())
				_exit(11);
			if (set_effective_cap(CAP_IPC_LOCK, false))
				_exit(12);
			if (m.try_pin(longterm, buf.addr(), 8, 0, a))
				_exit(13);
			if (vm_pin_kb() != pages_kb(8))
				_exit(14);
			held_pin b;
			if (m.try_pin(longterm, buf.addr() + 8 * page_size(), 1, 0, b) != -ENOMEM)
				_exit(15);
			// Not charged, so not refused: a short-term pin, a reference.
			for (auto c : {PINMATRIX_CONTRACT_GUP_REF, PINMATRIX_CONTRACT_FOLL_PIN})
				if (m.try_pin(c, buf.addr() + 8 * page_size(), 1, 0, b) || b.release())
					_exit(19);
			if (vm_pin_kb() != pages_kb(8) || m.info().pinned_pages != 8 || m.list().size() != 1)
				_exit(16);
			// Within the limit again once the first pin is gone.
			if (a.release() || vm_pin_kb() != 0)
				_exit(17);
			if (m.try_pin(PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM, buf.addr(), 8, 0, a))
				_exit(18);
			_exit(0);
		} catch (...) {
			_exit(1);
		}
	}
	int status = 0;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		<< child_step(status, {{1, "an exception in the child"},
				       {10, "setrlimit(RLIMIT_MEMLOCK) failed"},
				       {11, "a pin past the limit with CAP_IPC_LOCK was refused"},
				       {12, "capset: could not drop CAP_IPC_LOCK"},
				       {13, "a pin within the limit was refused"},
				       {14, "VmPin is not the 8 pinned pages"},
				       {15, "a long-term pin past RLIMIT_MEMLOCK without CAP_IPC_LOCK was not ENOMEM"},
				       {16, "a refused pin changed VmPin, pinned_pages or the list"},
				       {17, "unpin did not return VmPin to 0"},
				       {18, "a pin within the limit after an unpin was refused"},
				       {19, "a short-term pin or a reference was refused by the memlock limit"}});
}

// A file shared across fork (inherited, or passed over a socket) is one
// pin table, but each pin is charged to the mm that took it, under that
// process's own limit; a pin stays charged there until it is released,
// also when its process exits first (the shared file still holds it).
TEST(ModuleMemlock, AnInheritedFileChargesThePinningProcess)
{
	pin_module m = pin_module::open();
	mapping buf = populated_pages(pages_held * page_size());
	const long base = vm_pin_kb();
	held_pin mine = m.pin(PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM, buf.addr(), pages_held);
	ASSERT_EQ(vm_pin_kb(), base + pages_kb(pages_held));
	int ready[2], go[2];
	ASSERT_EQ(pipe(ready), 0);
	ASSERT_EQ(pipe(go), 0);
	child_process child;
	const pid_t pid = child.pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		// The parent's pins are not the child's (fork starts pinned_vm at 0).
		if (vm_pin_kb() != 0)
			_exit(20);
		if (raw_pin(m.fd(), PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM, buf.addr(), 4) <= 0 ||
		    vm_pin_kb() != pages_kb(4))
			_exit(21);
		if (set_memlock_pages(2) || set_effective_cap(CAP_IPC_LOCK, false))
			_exit(22);
		if (raw_pin(m.fd(), PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM, buf.addr(), 1) != -ENOMEM ||
		    vm_pin_kb() != pages_kb(4))
			_exit(23);
		char c = 'y';
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(24);
		_exit(0); // with its pin held by the shared file
	}
	close(ready[1]);
	close(go[0]);
	char c = 0;
	EXPECT_EQ(read(ready[0], &c, 1), 1);
	EXPECT_EQ(vm_pin_kb(), base + pages_kb(pages_held)) << "the child's pin was charged to the parent";
	EXPECT_EQ(write(go[1], &c, 1), 1);
	close(ready[0]);
	close(go[1]);
	int status = 0;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	child.pid = -1;
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		<< child_step(status, {{20, "the child started with a VmPin"},
				       {21, "the child's pin through the inherited file was not charged to it"},
				       {22, "setrlimit or capset failed"},
				       {23, "the child pinned past its own RLIMIT_MEMLOCK through the inherited file"},
				       {24, "pipe"}});
	// The child's pin outlived it in the shared file; releasing it leaves
	// the parent's charge alone.
	auto list = m.list();
	ASSERT_EQ(list.size(), 2u);
	for (const auto &p : list)
		if (p.id != mine.id()) {
			EXPECT_EQ(p.npages, 4u);
			EXPECT_EQ(m.try_unpin(p.id), 0);
		}
	EXPECT_EQ(vm_pin_kb(), base + pages_kb(pages_held));
	EXPECT_EQ(mine.release(), 0);
	EXPECT_EQ(vm_pin_kb(), base);
}

// Locking (issue 13, item 10): a pin that waits in GUP (here on a
// userfaultfd-registered range that nobody serves) holds no lock that
// another call on the same file needs, from another thread or another
// process; and SIGKILL ends each of them, the waiting pin too.
TEST(ModuleLocking, APinWaitingInGupBlocksNoOtherCallAndSigkillEndsIt)
{
	const int64_t outstanding = pins_outstanding();
	pin_module m = pin_module::open();
	int report[2];
	ASSERT_EQ(pipe(report), 0);
	// Another thread and another process each run every call on the file.
	auto every_call = [&m](char tag, int fd_out) {
		auto own = populated_pages(4 * page_size());
		held_pin p;
		pinmatrix_info info{};
		const bool ok = m.try_info(info) == 0 &&
				m.try_pin(PINMATRIX_CONTRACT_FOLL_PIN, own.addr(), 4, 0, p) == 0 &&
				m.list().size() == 1 && p.release() == 0;
		const char c = ok ? tag : 'x';
		if (write(fd_out, &c, 1) != 1)
			_exit(2);
	};
	child_process stuck;
	stuck.pid = fork();
	ASSERT_GE(stuck.pid, 0);
	if (stuck.pid == 0) {
		close(report[0]);
		const int uffd = int(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
		uffdio_api api{};
		api.api = UFFD_API;
		if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
			_exit(30);
		auto region = mapping::anonymous(4 * page_size(), false);
		uffdio_register reg{};
		reg.range.start = region.addr();
		reg.range.len = region.size();
		reg.mode = UFFDIO_REGISTER_MODE_MISSING;
		if (ioctl(uffd, UFFDIO_REGISTER, &reg))
			_exit(31);
		std::thread([&] {
			held_pin never;
			m.try_pin(PINMATRIX_CONTRACT_FOLL_PIN, region.addr(), 4, PINMATRIX_PIN_WRITE, never);
			_exit(32); // the fault was never served: GUP cannot have returned
		}).detach();
		pollfd pfd{uffd, POLLIN, 0};
		if (poll(&pfd, 1, 10'000) != 1)
			_exit(33); // no fault pending: the pin is not waiting in GUP
		every_call('a', report[1]);
		for (;;)
			pause();
	}
	auto got = [&](int ms) {
		pollfd p{report[0], POLLIN, 0};
		char c = 0;
		return poll(&p, 1, ms) == 1 && read(report[0], &c, 1) == 1 ? c : 0;
	};
	// The stuck child reports 'a' only once its pin's fault is pending.
	const char a = got(20'000);
	if (a == 0) {
		int status = reap_within(stuck.pid, 0);
		if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 30) {
			stuck.pid = -1;
			GTEST_SKIP() << "no userfaultfd in this kernel";
		}
	}
	EXPECT_EQ(a, 'a') << "another thread's calls on the file waited for the pin in GUP";
	// The file's other process, forked once the first waits in GUP.
	child_process other;
	other.pid = fork();
	ASSERT_GE(other.pid, 0);
	if (other.pid == 0) {
		close(report[0]);
		every_call('b', report[1]);
		for (;;)
			pause();
	}
	EXPECT_EQ(got(20'000), 'b') << "another process's calls on the file waited for the pin in GUP";
	close(report[0]);
	close(report[1]);
	// SIGKILL ends the other process at once, and then the stuck one.
	ASSERT_EQ(kill(other.pid, SIGKILL), 0);
	int status = reap_within(other.pid, 5'000);
	EXPECT_NE(status, -1) << "SIGKILL did not end the other process within 5 s (state "
			      << read_task_state(other.pid).state << ")";
	if (status != -1) {
		other.pid = -1;
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}
	ASSERT_EQ(kill(stuck.pid, SIGKILL), 0);
	status = reap_within(stuck.pid, 5'000);
	EXPECT_NE(status, -1) << "SIGKILL did not end the process whose pin waits in GUP within 5 s (state "
			      << read_task_state(stuck.pid).state << ")";
	if (status != -1) {
		stuck.pid = -1;
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			<< (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : "");
	}
	EXPECT_TRUE(m.list().empty());
	EXPECT_EQ(m.info().pinned_pages, 0u);
	EXPECT_EQ(pins_outstanding(), outstanding);
}

// npages is bounded (PINMATRIX_PIN_MAX_PAGES) before anything is allocated:
// whatever max_pinned_pages says, the page array never reaches the size at
// which kvmalloc_array() warns (INT_MAX bytes).
TEST_F(Module, ATooLargePinIsEINVALWhateverTheCap)
{
	const std::string param = "/sys/module/pinmatrix/parameters/max_pinned_pages";
	std::string old;
	std::ifstream(param) >> old;
	std::ofstream(param) << (1ULL << 40) << std::flush;
	struct restore {
		const std::string &param, &old;
		~restore() { std::ofstream(param) << old << std::flush; }
	} restore_cap{param, old};
	std::vector<uint64_t> pfns(1);
	for (uint64_t n : {uint64_t(PINMATRIX_PIN_MAX_PAGES + 1), uint64_t(1) << 29, uint64_t(INT32_MAX)}) {
		SCOPED_TRACE(n);
		pinmatrix_pin p{};
		p.size = sizeof(p);
		p.contract = PINMATRIX_CONTRACT_FOLL_PIN;
		p.addr = 0x10000; // far from the top: the range itself is valid
		p.npages = n;
		p.pfns = reinterpret_cast<uintptr_t>(pfns.data());
		EXPECT_EQ(raw_ioctl(module, PINMATRIX_IOC_PIN, p), EINVAL);
	}
	EXPECT_EQ(module.info().pinned_pages, 0u);
}
