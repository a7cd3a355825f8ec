// SPDX-License-Identifier: GPL-2.0
// `pinmatrix vm --format ktap`: the host streams the guest's cases as KTAP
// on stdout while QEMU runs (as the guest's results.json gains each), the
// document is results.ktap line for line, a case ended at --case-timeout is
// kselftest's TIMEOUT, and the kernel's own KTAP parser reads it nested.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "vm_records.hpp"

namespace fs = std::filesystem;
using namespace pinmatrix::test;

namespace {

struct timed_line {
	std::string text;
	double at_s;	// since the command started
};

struct streamed_run {
	int exit_code = -1;
	std::vector<timed_line> lines;	// stdout, each when it arrived
	std::string text;
};

// The command's stdout, line by line as it comes.
streamed_run read_as_it_comes(const std::string &cmd)
{
	streamed_run r;
	const auto t0 = std::chrono::steady_clock::now();
	FILE *p = popen(cmd.c_str(), "r");
	if (!p)
		return r;
	char *buf = nullptr;
	size_t cap = 0;
	for (ssize_t n; (n = getline(&buf, &cap, p)) > 0;) {
		std::string l(buf, size_t(n));
		r.text += l;
		if (l.back() == '\n')
			l.pop_back();
		r.lines.push_back({l, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
	}
	free(buf);
	const int status = pclose(p);
	r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return r;
}

const timed_line *find_line(const streamed_run &r, const std::string &prefix)
{
	for (const auto &l : r.lines)
		if (l.text.rfind(prefix, 0) == 0)
			return &l;
	return nullptr;
}

// tests/unit/ktap_kunit_parser_test.py parse FILE: the kernel's KTAP parser's
// tree of FILE, "suite/case STATUS" a line; exit 1 when it complained, 77
// without the kernel source.
command_result kernel_ktap_parser(const fs::path &file)
{
	command_result r;
	const std::string cmd = "python3 " PINMATRIX_SOURCE_DIR "/tests/unit/ktap_kunit_parser_test.py parse '" +
				file.string() + "' 2>&1";
	FILE *p = popen(cmd.c_str(), "r");
	if (!p)
		return r;
	char buf[4096];
	for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;)
		r.output.append(buf, n);
	const int status = pclose(p);
	r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return r;
}

std::string read_text(const fs::path &f)
{
	std::ifstream in(f);
	return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST(VmKtap, GuestRunStreamsNestedKtapAsItsCasesEnd)
{
	PINMATRIX_REQUIRE_GUEST();
	const fs::path out = fs::path(PINMATRIX_TEST_OUT) / "ktap-stream";
	const fs::path err = fs::path(PINMATRIX_TEST_OUT) / "ktap-stream.stderr";
	fs::remove_all(out);
	fs::create_directories(out.parent_path());
	// B's pin sleeps in the kernel until the runner kills it at its 10 s.
	const auto r = read_as_it_comes(std::string(PINMATRIX_BIN) +
					" vm --cases A,B,fork --fault kernel-hang-at=B --case-timeout 10 "
					"--format ktap --out " + out.string() + " 2>" + err.string());
	const std::string human = read_text(err);
	ASSERT_TRUE(fs::exists(out / "results.json")) << human;
	const auto doc = nlohmann::json::parse(read_text(out / "results.json"));
	EXPECT_EQ(r.exit_code, 1) << human;

	// stdout is results.ktap, and nothing else: the human lines are on stderr.
	EXPECT_EQ(r.text, read_text(out / "results.ktap"));
	EXPECT_NE(human.find("pinmatrix vm: booting"), std::string::npos) << human;
	EXPECT_EQ(r.text.find("pinmatrix vm:"), std::string::npos) << r.text;

	// Nested: a subtest per suite, B kselftest's TIMEOUT.
	for (const char *line : {"KTAP version 1", "1..2", "  # Subtest: pin", "  1..2", "  ok 1 A (movable-none)",
				 "  # B: case did not finish within 10 s", "not ok 1 pin", "  # Subtest: fork"})
		EXPECT_NE(find_line(r, line), nullptr) << line << "\n" << r.text;
	EXPECT_NE(find_line(r, "  not ok 2 B (movable-foll-pin) # TIMEOUT 10 seconds"), nullptr) << r.text;
	EXPECT_EQ(r.lines.back().text.rfind("# Totals: ", 0), 0u) << r.text;

	// Streamed while the guest ran: A's result came while B still had its
	// 10 s to run out, long before the document ended.
	const timed_line *a = find_line(r, "  ok 1 A (movable-none)");
	const timed_line *b = find_line(r, "  not ok 2 B");
	ASSERT_TRUE(a && b) << r.text;
	EXPECT_GE(b->at_s - a->at_s, 5.0) << "A at " << a->at_s << " s, B at " << b->at_s << " s";
	EXPECT_GE(r.lines.back().at_s - a->at_s, 5.0);

	// The kernel's own parser: the suites as groups, each case's status.
	const auto parsed = kernel_ktap_parser(out / "results.ktap");
	if (parsed.exit_code == 77)
		GTEST_SKIP() << "the rest passed; the kernel's KTAP parser is not here: " << parsed.output;
	ASSERT_EQ(parsed.exit_code, 0) << parsed.output;
	std::string want = "pin/A (movable-none) PASS\npin/B (movable-foll-pin) FAIL\n";
	for (const auto &c : doc["cases"])
		if (c.value("suite", "") == "fork")
			want += "fork/" + c["id"].get<std::string>() + " (" + c["name"].get<std::string>() + ") " +
				(c["verdict"] == "pass" ? "PASS" : c["verdict"] == "skip" ? "SKIP" : "FAIL") + "\n";
	EXPECT_EQ(parsed.output, want);
}
