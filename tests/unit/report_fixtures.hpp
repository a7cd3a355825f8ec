// SPDX-License-Identifier: GPL-2.0
#pragma once

// Inputs of the report tests: the results.json of a real run (a TCG guest,
// Debian's 6.1 kernel, every case passing: tests/data/results-pass.json)
// and variants made from it the way real runs differ: a failure, a guest
// panic (errors with a serial log), an unmet need (skips), a merged run of
// several kernels, and records of another suite without the pin matrix's
// fields. Expected outcomes are read back from these documents.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temp_dir.hpp"

namespace pinmatrix::test {

using nlohmann::json;
namespace fs = std::filesystem;

inline json sample_run()
{
	std::ifstream in(fs::path(PINMATRIX_TEST_DATA) / "results-pass.json");
	return json::parse(in);
}

inline json &record(json &doc, const std::string &id)
{
	for (auto &c : doc["cases"])
		if (c["id"] == id)
			return c;
	throw std::runtime_error("no case " + id);
}

inline void not_observed(json &c, const std::string &verdict, const std::string &reason)
{
	c["verdict"] = verdict;
	c["reason"] = reason;
	c["observed"] = nullptr;
	c["latency_ns"] = nullptr;
}

// B registers where it must not (a kernel that lost the check), the guest
// panics at D (D and every later case: errors), movable-mlock finds no page.
inline json run_with_failures()
{
	json doc = sample_run();
	json &b = record(doc, "B");
	b["verdict"] = "fail";
	b["reason"] = "registration returned ok, expected ENOMEM: <page> & \"migrated\" | 'anyway' \x01";
	b["observed"]["errno"] = 0;
	b["observed"]["errno_name"] = "ok";
	b["observed"]["summary"] = "moved 0x2228c->0x67d4, ok";
	bool after_panic = false;
	for (auto &c : doc["cases"]) {
		after_panic |= c["id"] == "D";
		if (after_panic)
			not_observed(c, "error", "no result from the guest: guest stopped before the job "
						 "finished (panic or reset?)");
	}
	not_observed(record(doc, "movable-mlock"), "skip", "no page found in movable placement within 2048 MiB");
	doc["vm"]["ended"] = "guest stopped before the job finished (panic or reset?)";
	doc["vm"]["serial_excerpt"] = "pinmatrix: fault injection: kernel panic at case D\n"
				      "[    5.123789] Kernel panic - not syncing: sysrq triggered crash\n"
				      "\x1b[0m[    5.124100] Call Trace:\n";
	return doc;
}

// A known kernel bug (matrix/known_bugs.cpp) met as predicted by A (xfail)
// and missed by B (xpass); its title carries markup that every report
// must escape.
inline json run_with_known_bugs()
{
	json doc = sample_run();
	const json bug = {{"id", "test-bug"},
			  {"title", "pins <b>in place</b> & \"more\""},
			  {"where", "mm/gup.c: a function()"},
			  {"kernels", "every 6.1"},
			  {"fix", {{"commit", "0123456789ab"}, {"subject", "mm/gup: fix it"}}},
			  {"fix_note", "fixed by 0123456789ab (\"mm/gup: fix it\")"},
			  {"kernel", "6.1.192"}};
	json &a = record(doc, "A");
	a["verdict"] = "xfail";
	a["reason"] = "expected failure, known bug test-bug of 6.1.192: ENOMEM";
	a["known_bug"] = bug;
	json &b = record(doc, "B");
	b["verdict"] = "xpass";
	b["reason"] = "unexpected pass: known bug test-bug should fail this case on 6.1.192";
	b["known_bug"] = bug;
	return doc;
}

// A run on a machine without the module: every case skips.
inline json run_all_skipped()
{
	json doc = sample_run();
	for (auto &c : doc["cases"])
		not_observed(c, "skip", "/dev/pinmatrix is absent: load pinmatrix.ko (--module)");
	return doc;
}

// The same run on another kernel: what a kernel update changes in it.
inline json on_kernel(json doc, const std::string &release)
{
	doc["kernel"]["release"] = release;
	doc["kernel"]["source"] = "build";
	doc["kernel"]["version"] = "#1 SMP PREEMPT_DYNAMIC";
	return doc;
}

struct matrix_kernel {
	std::string name, release;	// the matrix file's name, the release it booted
};

// A matrix run that merged each kernel x each boot placement (issue 3):
// each record names its kernel and boot; latencies carry several samples.
inline json merged_run(const std::vector<matrix_kernel> &kernels,
		       const std::vector<std::string> &boots = {"movable", "cma"})
{
	const json one = sample_run();
	json doc = {{"schema", one["schema"]}, {"groups", json::array()}, {"cases", json::array()}};
	int k = 0;
	for (const auto &[name, release] : kernels)
		for (const auto &boot : boots) {
			json kernel = {{"name", name}, {"release", release}, {"source", "debian"}};
			json boot_json = {{"placement", boot}, {"append", boot + "core=512M"}};
			doc["groups"].push_back({{"kernel", kernel}, {"boot", boot_json}, {"ended", nullptr}});
			for (json c : one["cases"]) {
				c["kernel"] = kernel;
				c["boot"] = boot_json;
				if (c["latency_ns"].is_number()) {
					const double ns = c["latency_ns"].get<double>() * (1 + 0.25 * k);
					c["latency_samples_ns"] = {ns * 0.9, ns, ns * 1.1, ns * 1.3, ns * 0.95};
				}
				doc["cases"].push_back(c);
			}
			k++;
		}
	return doc;
}

// Two kernels x two boot placements, B failing in the last guest.
inline json run_of_several_kernels()
{
	json doc = merged_run({{"debian", "6.1.0-57-amd64"}, {"build", "6.12.9-pinmatrix"}});
	const size_t per_guest = sample_run()["cases"].size();
	json &last_b = doc["cases"][doc["cases"].size() - per_guest + 1];
	last_b["verdict"] = "fail";
	last_b["reason"] = "registration returned ok, expected ENOMEM";
	return doc;
}

// Pin cases next to another suite's records, which have none of the pin
// matrix's fields (one has nothing but id, verdict and reason).
inline json run_with_another_suite()
{
	json doc = sample_run();
	doc["cases"].erase(doc["cases"].begin() + 3, doc["cases"].end());
	doc["cases"].push_back({{"id", "ualink/export-idempotent"}, {"name", "export-idempotent"},
				{"suite", "ualink"}, {"verdict", "pass"},
				{"expected", {{"summary", "same handle twice"}}},
				{"observed", {{"summary", "same handle"}, {"handle", "0x41"}}},
				{"latency_ns", nullptr}, {"duration_ns", 120000}});
	doc["cases"].push_back({{"id", "ualink/import-revoked"}, {"suite", "ualink"}, {"verdict", "fail"},
				{"reason", "import of a revoked handle succeeded"},
				{"expected", {{"summary", "EACCES"}}}, {"observed", {{"summary", "ok"}}}});
	doc["cases"].push_back({{"id", "ualink/no-device"}, {"verdict", "skip"}, {"reason", "no UALink device"}});
	return doc;
}

// A guest that died at D: the cases before it kept their records (each
// with its start time), D was running (an error with the panic in the
// serial excerpt), the cases after it never started (errors marked
// `not_reached`, as vm/guest_results.cpp writes them).
inline json run_cut_short()
{
	json doc = sample_run();
	const std::string ended = "guest stopped before the job finished (panic or reset?)";
	int minute = 0;
	bool reached = true;
	for (auto &c : doc["cases"]) {
		if (c["id"] == "D") {
			not_observed(c, "error", "no result from the guest: case D was running when the guest ended: " + ended);
			reached = false;
		} else if (!reached) {
			not_observed(c, "error", "no result from the guest: not reached: " + ended);
			c["not_reached"] = true;
		} else {
			c["started_at"] = "2026-11-30T05:2" + std::to_string(minute++) + ":05Z";
		}
	}
	doc["complete"] = false;
	doc["vm"]["ended"] = ended;
	doc["vm"]["serial_excerpt"] = "pinmatrix: fault injection: kernel panic at case D\n"
				      "[    5.123789] Kernel panic - not syncing: sysrq triggered crash\n";
	return doc;
}

// Google Benchmark JSON as pinmatrix_bench writes it: a harness figure, a
// family with two repetitions, one that skipped (tests/data/bench-sample.json).
inline json sample_bench()
{
	std::ifstream in(fs::path(PINMATRIX_TEST_DATA) / "bench-sample.json");
	return json::parse(in);
}

struct named_run {
	const char *name;
	json doc;
};

inline std::vector<named_run> all_runs()
{
	return {{"pass", sample_run()},
		{"failures", run_with_failures()},
		{"all-skipped", run_all_skipped()},
		{"several-kernels", run_of_several_kernels()},
		{"another-suite", run_with_another_suite()}};
}

inline int count_verdict(const json &doc, const std::string &verdict)
{
	int n = 0;
	for (const auto &c : doc["cases"])
		n += c.value("verdict", "") == verdict;
	return n;
}

struct shell_result {
	int exit_code = -1;
	std::string output;
};

// Runs a shell command; stdout (and stderr when asked) come back.
inline shell_result shell(const std::string &command, bool with_stderr = true)
{
	shell_result r;
	FILE *p = popen((command + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
	if (!p)
		return r;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		r.output.append(buf, n);
	const int status = pclose(p);
	r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return r;
}

inline bool have_command(const std::string &name)
{
	return shell("command -v " + name + " >/dev/null").exit_code == 0;
}

inline std::string shell_quoted(const fs::path &p)
{
	std::string q = "'";
	for (char ch : p.string())
		q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
	return q + "'";
}

} // namespace pinmatrix::test
