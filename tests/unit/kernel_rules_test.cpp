// SPDX-License-Identifier: GPL-2.0
// The version table (cases/pin/kernel_rules.cpp): which rows a case on a given
// kernel is judged under, and how a kernel's upstream version is read.

#include <algorithm>

#include <gtest/gtest.h>

#include "pin/kernel_rules.hpp"
#include "known_bugs.hpp"

using namespace pinmatrix;

namespace {

const case_def &case_named(const std::string &name, placement restricted = placement::movable)
{
	for (const auto &c : pin_cases(restricted))
		if (c.name == name || c.id == name)
			return c;
	throw std::runtime_error("no case " + name);
}

const applied_rule *rule(const std::vector<applied_rule> &rules, const std::string &id)
{
	auto it = std::find_if(rules.begin(), rules.end(), [&](const auto &r) { return r.id == id; });
	return it == rules.end() ? nullptr : &*it;
}

} // namespace

TEST(KernelVersion, DebianNamesTheUpstreamVersionInUnameV)
{
	auto v = upstream_version("6.1.0-57-amd64", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2025-11-26)");
	ASSERT_TRUE(v);
	EXPECT_EQ(v->text(), "6.1.192");
	EXPECT_EQ(upstream_version("6.12.117+deb12-amd64", "#1 SMP Debian 6.12.117-1~deb12u1")->text(), "6.12.117");
	EXPECT_EQ(upstream_version("6.12.118-pinmatrix", "#1 SMP Tue Dec 1 2026")->text(), "6.12.118");
	EXPECT_EQ(upstream_version("7.2.13+deb14-amd64", "")->text(), "7.2.13");
}

TEST(KernelVersion, AnAbiNameAloneIsUnknownNotVersionZero)
{
	EXPECT_FALSE(upstream_version("6.1.0-57-amd64", "#1 SMP PREEMPT_DYNAMIC"));
	EXPECT_FALSE(upstream_version("custom", ""));
}

TEST(KernelRules, TheContractAppliesToEveryCaseOnEveryKernel)
{
	for (const auto &c : pin_cases(placement::cma)) {
		const auto rules = rules_applied(c, kernel_version{7, 2, 13});
		const auto *base = rule(rules, "longterm-placement");
		ASSERT_NE(base, nullptr) << c.name;
		EXPECT_TRUE(base->in_range);
		EXPECT_EQ(base->versions, "every kernel");
	}
}

TEST(KernelRules, RegressionWindowsByVersion)
{
	const auto &a = case_named("A");
	EXPECT_TRUE(rule(rules_applied(a, kernel_version{6, 1, 140}), "1aaf8c122918")->in_range);
	EXPECT_TRUE(rule(rules_applied(a, kernel_version{6, 12, 14}), "1aaf8c122918")->in_range);
	EXPECT_FALSE(rule(rules_applied(a, kernel_version{6, 1, 192}), "1aaf8c122918")->in_range);
	EXPECT_FALSE(rule(rules_applied(a, kernel_version{6, 12, 117}), "1aaf8c122918")->in_range);
	EXPECT_FALSE(rule(rules_applied(a, kernel_version{7, 2, 13}), "1aaf8c122918")->in_range);
	const auto &mlock = case_named("movable-mlock");
	EXPECT_TRUE(rule(rules_applied(mlock, kernel_version{6, 12, 48}), "98c6d259319e")->in_range);
	EXPECT_FALSE(rule(rules_applied(mlock, kernel_version{6, 12, 49}), "98c6d259319e")->in_range);
}

TEST(KernelRules, RegressionRowsOnlyForTheCasesTheyConcern)
{
	EXPECT_EQ(rule(rules_applied(case_named("D"), kernel_version{6, 1, 140}), "1aaf8c122918"), nullptr);
	EXPECT_EQ(rule(rules_applied(case_named("A"), kernel_version{6, 1, 140}), "98c6d259319e"), nullptr);
}

TEST(KernelRules, UnknownVersionIsSaidNeverAssumed)
{
	const auto rules = rules_applied(case_named("A"), std::nullopt);
	const auto *r = rule(rules, "1aaf8c122918");
	ASSERT_NE(r, nullptr);
	EXPECT_FALSE(r->in_range);
	EXPECT_EQ(r->this_kernel.rfind("unknown", 0), 0u) << r->this_kernel;
}

TEST(KernelVersion, ARangeIsWrittenOneWayWithItsCommit)
{
	const auto udmabuf = since({6, 11, 0}, "c6a3194c05e7");
	EXPECT_EQ(range_text(udmabuf), "6.11.0 on (c6a3194c05e7)");
	EXPECT_TRUE(udmabuf.holds({6, 11, 0}));
	EXPECT_FALSE(udmabuf.holds({6, 10, 14}));
	const auto gap = before({6, 11, 0});
	EXPECT_EQ(range_text(gap), "before 6.11");
	EXPECT_TRUE(gap.holds({6, 10, 14}));
	EXPECT_FALSE(gap.holds({6, 11, 0}));
	EXPECT_EQ(range_text(before({7, 0, 0})), "before 7.0");
	EXPECT_TRUE(before({7, 0, 0}).holds({6, 19, 3}));
	EXPECT_EQ(range_text(before({6, 1, 129})), "before 6.1.129");
	EXPECT_EQ(range_text(whole_series(6, 1)), "every 6.1");
	EXPECT_EQ(range_text(every_kernel()), "every kernel");
	EXPECT_EQ(range_text(version_range{{6, 1, 129}, {6, 1, 154}}), "6.1.129-6.1.154");
}

TEST(KernelVersion, TheRowOfAKernelIsNeverADefault)
{
	struct row {
		version_range versions;
		int answer;
	};
	const std::vector<row> changed = {{before({6, 5, 0}), 0}, {since({6, 5, 0}, "476c1dfefab8"), 14}};
	EXPECT_EQ(row_for_kernel(changed, kernel_version{6, 1, 192})->answer, 0);
	EXPECT_EQ(row_for_kernel(changed, kernel_version{6, 5, 0})->answer, 14);
	EXPECT_EQ(row_for_kernel(changed, std::nullopt), nullptr) << "the rows differ: unknown";
	const std::vector<row> always = {{every_kernel(), 0}};
	EXPECT_EQ(row_for_kernel(always, std::nullopt)->answer, 0) << "one row holds whatever the version";
	const std::vector<row> later = {{since({6, 2, 0}), 0}};
	EXPECT_EQ(row_for_kernel(later, kernel_version{6, 1, 192}), nullptr) << "no row covers 6.1";
}

TEST(KernelRules, ARegressionsKernelsAreItsKnownBugs)
{
	for (const char *id : {"1aaf8c122918", "98c6d259319e"}) {
		const auto *bug = find_known_bug(id);
		ASSERT_NE(bug, nullptr) << id;
		const auto rule = std::find_if(kernel_rules().begin(), kernel_rules().end(),
					       [&](const kernel_rule &r) { return std::string(r.id) == id; });
		ASSERT_NE(rule, kernel_rules().end()) << id;
		EXPECT_EQ(ranges_text(rule->versions), ranges_text(bug->kernels)) << id;
	}
}
