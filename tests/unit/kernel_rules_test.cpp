// SPDX-License-Identifier: GPL-2.0
// The version table (cases/pin/kernel_rules.cpp): which rows a case on a given
// kernel is judged under, and how a kernel's upstream version is read.

#include <algorithm>

#include <gtest/gtest.h>

#include "kernel_rules.hpp"

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
