// SPDX-License-Identifier: GPL-2.0
// `pinmatrix explain` without a guest: the RANGE forms, clear errors (exit
// 2) for a bad pid or range, a report on this test's own memory, and the
// wrapper form's exit status. The guest test (tests/vm/vm_matrix_test.cpp)
// runs it on processes with a small memlock limit and pages in
// ZONE_MOVABLE, and wraps a real failing ibv_reg_mr.

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "text.hpp"
#include "../command.hpp"
#include "explain.hpp"
#include "sys_error.hpp"

using namespace pinmatrix;
using pinmatrix::test::run_pinmatrix;

namespace {

size_t lines_of(const std::string &s)
{
	return size_t(std::count(s.begin(), s.end(), '\n'));
}

} // namespace

TEST(ExplainRange, TheThreeForms)
{
	auto r = parse_address_range("7f0000000000-7f0000002000");
	EXPECT_EQ(r.start, 0x7f0000000000u);
	EXPECT_EQ(r.end, 0x7f0000002000u);
	r = parse_address_range("0x7f0000000000+64K");
	EXPECT_EQ(r.end - r.start, 64u << 10);
	r = parse_address_range("0x1000+0x2000");
	EXPECT_EQ(r.end, 0x3000u);
	r = parse_address_range("0x1000+4096");
	EXPECT_EQ(r.end, 0x2000u);
	r = parse_address_range("0x7f0000000000");
	EXPECT_EQ(r.end - r.start, uint64_t(sysconf(_SC_PAGESIZE)));
	for (const char *bad : {"", "xyz", "0x2000-0x1000", "0x1000+", "0x1000+12Q", "0x1000-", "-0x1000",
				"0x1000+0", "ffffffffffffffff+2"})
		EXPECT_THROW(parse_address_range(bad), usage_error) << bad;
	// The length itself must not wrap: 17179869185 GiB is 2^64 + 1 GiB
	// (issue 13, item 7), and neither may START + LENGTH.
	for (const char *wraps : {"0x1000+17179869185G", "0x1000+17592186044417M",
				  "0xffffffffffff0000+0x10000", "0xffffffffffffffff"})
		try {
			parse_address_range(wraps);
			ADD_FAILURE() << wraps << " was accepted";
		} catch (const usage_error &e) {
			EXPECT_NE(std::string(e.what()).find("wraps"), std::string::npos) << wraps << ": " << e.what();
		}
}

TEST(ExplainCommand, BadPidOrRangeExitsTwoWithOneMessage)
{
	const std::string self = std::to_string(getpid());
	struct {
		std::string args, says;
	} bad[] = {
		{"explain 2147483646 0x1000", "no such process"},
		{"explain 0 0x1000", "not a process id"},
		{"explain " + self + " 0x10-0x5", "empty"},
		{"explain " + self + " 0x1000", "is not mapped in pid " + self},
		{"explain " + self + " nonsense", "expected START-END"},
		{"explain " + self, "give PID RANGE"},
		{"explain", "give PID RANGE"},
		{"explain --", "no command given"},
		{"explain notapid 0x1000", "pid"},
		{"explain " + self + " 0x1000 -- true", "not both"},
	};
	for (const auto &b : bad) {
		auto r = run_pinmatrix(b.args);
		EXPECT_EQ(r.exit_code, 2) << b.args << "\n" << r.output;
		EXPECT_NE(r.output.find(b.says), std::string::npos) << b.args << "\n" << r.output;
		EXPECT_LE(lines_of(r.output), 3u) << b.args << "\n" << r.output;
	}
}

TEST(ExplainCommand, ThisProcessesOwnAnonymousPages)
{
	const size_t ps = size_t(sysconf(_SC_PAGESIZE));
	void *p = mmap(nullptr, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(p, MAP_FAILED);
	static_cast<char *>(p)[0] = 1;	// one page present, three not
	const uint64_t a = reinterpret_cast<uintptr_t>(p);
	const std::string range = hex(a) + "-" + hex(a + 4 * ps);

	auto r = run_pinmatrix("explain " + std::to_string(getpid()) + " " + range);
	EXPECT_EQ(r.exit_code, 0) << r.output;
	EXPECT_NE(r.output.find("allocation class  host anonymous"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("RLIMIT_MEMLOCK"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("4 pages, 1 present"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("3 pages not present"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("an ENOMEM from ibv_reg_mr on this range would most likely mean: "), std::string::npos)
		<< r.output;
	EXPECT_NE(r.output.find("pins are not visible"), std::string::npos) << r.output;

	auto j = run_pinmatrix("explain --format json " + std::to_string(getpid()) + " " + range);
	EXPECT_EQ(j.exit_code, 0) << j.output;
	const auto doc = nlohmann::json::parse(j.output);
	EXPECT_EQ(doc["allocation_class"], "host anonymous");
	EXPECT_EQ(doc["pages_total"], 4);
	EXPECT_TRUE(doc["hypothetical_enomem"].get<bool>());
	EXPECT_FALSE(doc["classification"]["class"].get<std::string>().empty());
	munmap(p, 4 * ps);
}

TEST(ExplainCommand, TheWrapperExitsWithTheCommandsStatus)
{
	// No kprobes on the host running the unit tests: the guest test traces.
	setenv("PINMATRIX_NO_TRACE", "1", 1);
	auto ok = run_pinmatrix("explain -- true");
	EXPECT_EQ(ok.exit_code, 0) << ok.output;
	EXPECT_NE(ok.output.find("`true`"), std::string::npos) << ok.output;
	auto fails = run_pinmatrix("explain -- sh -c 'exit 3'");
	EXPECT_EQ(fails.exit_code, 3) << fails.output;
	// A command that is not there: 127 (as env(1)) and one line, found
	// before the trace (three lines before: the exit and the trace's state).
	for (const std::string cmd : {"/nonexistent/command", "nonexistent-pm-command"}) {
		auto missing = run_pinmatrix("explain -- " + cmd);
		EXPECT_EQ(missing.exit_code, 127) << missing.output;
		EXPECT_NE(missing.output.find("pinmatrix explain: cannot run " + cmd + ": no such "), std::string::npos)
			<< missing.output;
		EXPECT_EQ(std::count(missing.output.begin(), missing.output.end(), '\n'), 1) << missing.output;
	}
	EXPECT_NE(ok.output.find("no kernel trace"), std::string::npos) << ok.output;
	unsetenv("PINMATRIX_NO_TRACE");
}
