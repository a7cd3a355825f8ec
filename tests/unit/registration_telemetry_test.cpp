// SPDX-License-Identifier: GPL-2.0
// What an ENOMEM from a registration meant (section 12 of the incident
// write-up), decided by one rule table from hand-built facts: the memlock
// quota, long-term placement blocked by an existing pin, capacity, and
// unknown, each with the facts that decided it, and the facts that rule
// one out for another.

#include <cerrno>
#include <set>

#include <gtest/gtest.h>

#include "registration_telemetry.hpp"

using namespace pinmatrix;

namespace {

// One page of a registration that asked for FOLL_LONGTERM, ordinary memory,
// plenty of memlock and memory, nothing traced: no reason for an ENOMEM.
registration_facts plain_enomem()
{
	registration_facts f;
	f.err = ENOMEM;
	f.foll_longterm = true;
	f.length = 4096;
	f.page_size = 4096;
	f.memlock_known = true;
	f.memlock_limit = 8 << 20;
	f.cap_ipc_lock = false;
	f.vm_pin_bytes = 0;
	f.pages = 1;
	f.pages_placement_known = 1;
	f.pins_visible = true;
	f.mem_available = uint64_t(700) << 20;
	f.min_free = uint64_t(4) << 20;
	return f;
}

// Case B: a ZONE_MOVABLE page the module holds with FOLL_PIN.
registration_facts case_b()
{
	registration_facts f = plain_enomem();
	f.pages_not_longterm_pinnable = 1;
	f.not_pinnable_where = "zone Movable";
	f.pages_module_pinned = 1;
	f.module_pins = {"FOLL_PIN pin #1"};
	f.pages_maybe_dma_pinned = 1;
	f.traced = true;
	f.gup_reached = true;
	f.migration_attempted = true;
	f.migrate_failed = 1;
	f.gup_errno = ENOMEM;
	f.umem_errno = ENOMEM;
	return f;
}

// The memlock case: RLIMIT_MEMLOCK half a page, no CAP_IPC_LOCK.
registration_facts memlock()
{
	registration_facts f = plain_enomem();
	f.memlock_limit = 2048;
	f.traced = true;
	f.gup_reached = false;
	f.umem_errno = ENOMEM;
	return f;
}

bool mentions(const std::vector<std::string> &lines, const std::string &s)
{
	for (const auto &l : lines)
		if (l.find(s) != std::string::npos)
			return true;
	return false;
}

} // namespace

TEST(Classification, TheRuleTableHasUniqueRulesForEveryClassButUnknown)
{
	std::set<std::string> ids;
	std::set<enomem_class> classes;
	for (const auto &r : classification_rules()) {
		EXPECT_TRUE(ids.insert(r.id).second) << r.id;
		EXPECT_NE(std::string(r.meaning), "");
		classes.insert(r.cls);
	}
	EXPECT_EQ(classes, (std::set<enomem_class>{enomem_class::memlock_quota, enomem_class::placement_blocked_by_pin,
						   enomem_class::capacity}));
	EXPECT_STREQ(name(enomem_class::memlock_quota), "memlock quota");
	EXPECT_STREQ(name(enomem_class::placement_blocked_by_pin), "long-term placement blocked by an existing pin");
	EXPECT_STREQ(name(enomem_class::capacity), "capacity");
	EXPECT_STREQ(name(enomem_class::unknown), "unknown");
}

TEST(Classification, CaseB_PlacementBlockedByTheHeldPin)
{
	const auto c = classify_failure(case_b());
	EXPECT_EQ(c.cls, enomem_class::placement_blocked_by_pin);
	EXPECT_EQ(c.label, "long-term placement blocked by an existing pin");
	EXPECT_EQ(c.rule, "placement-blocked-by-visible-pin");
	EXPECT_TRUE(mentions(c.facts, "zone Movable")) << c.facts.front();
	EXPECT_TRUE(mentions(c.facts, "FOLL_PIN pin #1"));
	EXPECT_TRUE(mentions(c.facts, "maybe_dma_pinned"));
	EXPECT_TRUE(mentions(c.facts, "failed 1"));
	EXPECT_TRUE(mentions(c.ruled_out, "memlock-quota: memlock:")) << "why not the quota";
}

TEST(Classification, MemlockQuotaNotPlacementEvenOnAPageThatNeedsMigration)
{
	auto f = memlock();
	EXPECT_EQ(classify_failure(f).cls, enomem_class::memlock_quota);
	// The page in ZONE_MOVABLE with a pin on it: still the quota, since
	// ib_umem_get checks it before it pins anything.
	f.pages_not_longterm_pinnable = 1;
	f.not_pinnable_where = "zone Movable";
	f.pages_module_pinned = 1;
	f.module_pins = {"FOLL_PIN pin #1"};
	const auto c = classify_failure(f);
	EXPECT_EQ(c.label, "memlock quota");
	EXPECT_EQ(c.rule, "memlock-quota");
	EXPECT_TRUE(mentions(c.facts, "> RLIMIT_MEMLOCK 2 KiB (0 pages)")) << c.facts.front();
	EXPECT_TRUE(mentions(c.facts, "no CAP_IPC_LOCK"));
	EXPECT_TRUE(mentions(c.facts, "without calling the long-term GUP"));
}

TEST(Classification, MemlockCountsPagesAsIbUmemGetDoes)
{
	auto f = plain_enomem();
	f.memlock_limit = 64 << 10;	// 16 pages
	f.vm_pin_bytes = 60 << 10;	// 15 pinned already
	f.length = 4096;		// 16th: fits
	EXPECT_NE(classify_failure(f).cls, enomem_class::memlock_quota);
	f.length = 8192;		// 17 > 16
	EXPECT_EQ(classify_failure(f).cls, enomem_class::memlock_quota);
	f.cap_ipc_lock = true;		// CAP_IPC_LOCK: no limit
	const auto c = classify_failure(f);
	EXPECT_NE(c.cls, enomem_class::memlock_quota);
	EXPECT_TRUE(mentions(c.ruled_out, "CAP_IPC_LOCK"));
	f.cap_ipc_lock = false;
	f.memlock_limit.reset();	// unlimited
	EXPECT_NE(classify_failure(f).cls, enomem_class::memlock_quota);
}

TEST(Classification, OverTheLimitButTheTraceShowsGupReachedIsNotTheQuota)
{
	auto f = case_b();
	f.memlock_limit = 2048;
	// ib_umem_get got past its memlock check (it called the GUP): the
	// limit was not what failed.
	EXPECT_EQ(classify_failure(f).cls, enomem_class::placement_blocked_by_pin);
}

TEST(Classification, MemlockInferredFromTheTraceWhenTheProcessIsGone)
{
	auto f = memlock();
	f.memlock_known = false;	// explain -- CMD: the process exited first
	const auto c = classify_failure(f);
	EXPECT_EQ(c.cls, enomem_class::memlock_quota);
	EXPECT_TRUE(mentions(c.facts, "memlock state not read"));
	f.traced = false;
	EXPECT_EQ(classify_failure(f).cls, enomem_class::unknown);
}

TEST(Classification, Capacity)
{
	auto f = plain_enomem();
	f.mem_available = 2 << 20;	// below min_free_kbytes
	auto c = classify_failure(f);
	EXPECT_EQ(c.cls, enomem_class::capacity);
	EXPECT_TRUE(mentions(c.facts, "MemAvailable 2.0 MiB")) << c.facts.front();

	// ib_umem_get failed before pinning, within its memlock limit: one of
	// its own allocations.
	f = plain_enomem();
	f.traced = true;
	f.gup_reached = false;
	f.umem_errno = ENOMEM;
	c = classify_failure(f);
	EXPECT_EQ(c.cls, enomem_class::capacity);
	EXPECT_TRUE(mentions(c.facts, "kernel allocations failed"));
}

TEST(Classification, PlacementBlockedByAPinThisToolCannotSee)
{
	// A ZONE_MOVABLE page, no pin the module holds, but the trace shows the
	// MR_LONGTERM_PIN migration failing: another process's or driver's pin.
	auto f = case_b();
	f.pages_module_pinned = 0;
	f.module_pins.clear();
	f.pages_maybe_dma_pinned = 0;
	auto c = classify_failure(f);
	EXPECT_EQ(c.cls, enomem_class::placement_blocked_by_pin);
	EXPECT_EQ(c.rule, "placement-blocked-by-unseen-pin");
	EXPECT_TRUE(mentions(c.facts, "failed 1"));

	// explain PID RANGE on a live node: no trace, no pins visible, pages in
	// ZONE_MOVABLE: inferred, and the facts say so.
	f = plain_enomem();
	f.pins_visible = false;
	f.pages_not_longterm_pinnable = 1;
	f.not_pinnable_where = "zone Movable";
	c = classify_failure(f);
	EXPECT_EQ(c.cls, enomem_class::placement_blocked_by_pin);
	EXPECT_TRUE(mentions(c.facts, "inferred"));

	// explain -- CMD: the page was gone before it could be read, but the
	// kernel migrated for MR_LONGTERM_PIN only a page that needed it.
	f = case_b();
	f.pins_visible = false;
	f.pages_placement_known = 0;
	f.pages_not_longterm_pinnable = 0;
	f.pages_module_pinned = 0;
	f.module_pins.clear();
	f.pages_maybe_dma_pinned = 0;
	f.cap_ipc_lock = true;
	c = classify_failure(f);
	EXPECT_EQ(c.cls, enomem_class::placement_blocked_by_pin);
	EXPECT_EQ(c.rule, "placement-blocked-by-unseen-pin");
	EXPECT_TRUE(mentions(c.facts, "the kernel migrated 1 page for the long-term pin")) << c.facts.front();

	// The migration succeeded: not placement.
	f = case_b();
	f.migrate_failed = 0;
	f.migrate_succeeded = 1;
	EXPECT_EQ(classify_failure(f).cls, enomem_class::unknown);
}

TEST(Classification, UnknownWhenNothingFitsAndSaysWhatWasRuledOut)
{
	const auto c = classify_failure(plain_enomem());
	EXPECT_EQ(c.cls, enomem_class::unknown);
	EXPECT_EQ(c.label, "unknown");
	EXPECT_EQ(c.ruled_out.size(), classification_rules().size());
	EXPECT_TRUE(mentions(c.ruled_out, "every page is long-term pinnable"));
	EXPECT_TRUE(mentions(c.ruled_out, "not short of memory"));
}

TEST(Classification, OtherErrnosAreNotCalledENOMEM)
{
	auto f = plain_enomem();
	f.err = EPERM;
	f.memlock_limit = 0;
	auto c = classify_failure(f);
	EXPECT_EQ(c.label, "not ENOMEM");
	EXPECT_FALSE(c.cls);
	EXPECT_EQ(c.rule, "eperm-memlock-zero");
	f.err = EFAULT;
	c = classify_failure(f);
	EXPECT_EQ(c.rule, "other-errno");
	EXPECT_TRUE(mentions(c.facts, "EFAULT"));
}

TEST(Classification, FailureStageFromTheTrace)
{
	trace_path t;
	t.from_trace = true;
	t.umem_called = true;
	t.gup_reached = false;
	EXPECT_NE(failure_stage(memlock(), &t).find("before pinning"), std::string::npos);
	t.gup_reached = true;
	t.migration_attempted = true;
	t.migrate_failed = 1;
	t.gup_errno = ENOMEM;
	EXPECT_NE(failure_stage(case_b(), &t).find("migration (MR_LONGTERM_PIN) failed"), std::string::npos);
	t = {};
	t.from_trace = true;
	t.umem_called = true;
	t.gup_reached = true;
	t.provider_errno = ENOMEM;
	EXPECT_NE(failure_stage(case_b(), &t).find("the driver's MR creation"), std::string::npos);
	// Not traced: inferred from the limit, or said.
	EXPECT_NE(failure_stage(memlock(), nullptr).find("inferred"), std::string::npos);
	EXPECT_EQ(failure_stage(plain_enomem(), nullptr), "not traced");
	auto ok = plain_enomem();
	ok.err = 0;
	EXPECT_EQ(failure_stage(ok, nullptr), "");
}
