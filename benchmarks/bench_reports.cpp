// SPDX-License-Identifier: GPL-2.0
// pinmatrix_report_bench: what `pinmatrix report`, `report --compare` and
// `report --fleet` cost on a large run (a fleet of many nodes is 100,000
// cases). No module, no root: the reports alone, on a synthetic run made
// here the way real runs look (results.json schema pinmatrix/1: the pin
// suite's placements and first pins, a few failures with their own
// reasons, skips sharing theirs, latency samples, a matrix of kernels).
//
//   pinmatrix_report_bench [--benchmark_filter=REGEX] [--benchmark_* ...]
//
// Names: report/<format>/<cases>/<kernels>, compare/<cases>/<kernels>,
// fleet/<cases>/<nodes>. Speed is measured here, never asserted in a test.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "compare.hpp"
#include "fleet.hpp"
#include "reports.hpp"

using nlohmann::json;
using namespace pinmatrix;
namespace fs = std::filesystem;

namespace {

const char *const placements[] = {"ordinary", "movable", "cma"};
const char *const first_pins[] = {"none", "FOLL_PIN (held)", "FOLL_PIN|FOLL_LONGTERM (held)", "GUP ref (held)",
				  "mlock"};

std::string id_of(size_t i)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "case-%06zu", i);
	return buf;
}

// One record as the pin suite writes it; `shift` changes a few verdicts
// (the other side of a comparison).
json record_of(size_t i, size_t shift)
{
	const size_t v = (i + shift) % 200;
	const char *verdict = v == 0 ? "fail" : v < 4 ? "skip" : v == 4 ? "error" : "pass";
	const double ns = 40000 + double((i * 7919) % 5000) * 100;
	json c = {{"id", id_of(i)},
		  {"name", id_of(i)},
		  {"suite", "pin"},
		  {"placement", placements[i % 3]},
		  {"first_pin", first_pins[(i / 3) % 5]},
		  {"first_pin_label", first_pins[(i / 3) % 5]},
		  {"second_pin", "ibv_reg_mr"},
		  {"expected", {{"errno", 0}, {"summary", "moves, ok"}}},
		  {"observed", {{"errno", 0}, {"errno_name", "ok"}, {"summary", "moved, ok"}, {"pfn_before", 4096 + i},
				{"pfn_after", 8192 + i}, {"migrated", true}}},
		  {"latency_ns", ns},
		  {"duration_ns", ns * 3},
		  {"verdict", verdict}};
	if (i % 10 == 0)
		c["latency_samples_ns"] = {ns * 0.9, ns, ns * 1.1, ns * 1.3};
	if (v == 0)
		c["reason"] = "registration returned ok, expected ENOMEM at pfn " + std::to_string(4096 + i);
	else if (v < 4)
		c["reason"] = "no page found in " + std::string(placements[v % 3]) + " placement within 2048 MiB";
	else if (v == 4)
		c["reason"] = "no result from the guest: case timed out after 60 s";
	return c;
}

// `cases` records over `kernels` guests (kernel x boot of a matrix run;
// one kernel: a plain run).
json synthetic_run(size_t cases, size_t kernels, size_t shift = 0)
{
	json doc = {{"schema", "pinmatrix/1"},
		    {"kernel", {{"release", "6.1.0-57-amd64"}, {"cmdline", "console=ttyS0 movablecore=512M"}}},
		    {"complete", true},
		    {"cases", json::array()}};
	const size_t per_kernel = cases / kernels;
	for (size_t k = 0; k < kernels; k++)
		for (size_t i = 0; i < per_kernel; i++) {
			json c = record_of(i, shift + k);
			if (kernels > 1) {
				c["kernel"] = {{"name", "k" + std::to_string(k / 2)},
					       {"release", "6." + std::to_string(1 + k / 2) + ".0"}};
				c["boot"] = {{"placement", k % 2 ? "cma" : "movable"}};
			}
			doc["cases"].push_back(std::move(c));
		}
	return doc;
}

template <std::string (*format)(const json &)>
void report_format(benchmark::State &state)
{
	const json doc = synthetic_run(size_t(state.range(0)), size_t(state.range(1)));
	for (auto _ : state)
		benchmark::DoNotOptimize(format(doc));
	state.SetItemsProcessed(int64_t(state.iterations()) * state.range(0));
}

std::string html(const json &doc)
{
	return format_html(doc);
}

std::string markdown(const json &doc)
{
	return format_summary_markdown(doc);
}

void compare(benchmark::State &state)
{
	const json before = synthetic_run(size_t(state.range(0)), size_t(state.range(1)));
	const json after = synthetic_run(size_t(state.range(0)), size_t(state.range(1)), 1);
	for (auto _ : state) {
		const auto c = compare_results(before, after);
		benchmark::DoNotOptimize(format_comparison_text(c));
		benchmark::DoNotOptimize(format_comparison_markdown(c));
		benchmark::DoNotOptimize(comparison_json(c).dump());
	}
	state.SetItemsProcessed(int64_t(state.iterations()) * state.range(0));
}

// A fleet of `nodes` node directories (status.json and results.json each),
// merged and shown: what `report --fleet` does before writing.
void fleet(benchmark::State &state)
{
	std::string pattern = (fs::temp_directory_path() / "pm-report-bench-XXXXXX").string();
	if (!mkdtemp(pattern.data())) {
		state.SkipWithError("mkdtemp failed");
		return;
	}
	const fs::path top = pattern;
	const size_t nodes = size_t(state.range(1));
	std::vector<fs::path> dirs;
	for (size_t n = 0; n < nodes; n++) {
		const fs::path dir = top / ("node" + std::to_string(n));
		fs::create_directories(dir);
		std::ofstream(dir / "status.json") << json{{"node", dir.filename().string()}, {"state", "ran"}}.dump();
		std::ofstream(dir / "results.json") << synthetic_run(size_t(state.range(0)) / nodes, 1, n).dump();
		dirs.push_back(dir);
	}
	for (auto _ : state) {
		const json merged = merge_fleet(dirs);
		benchmark::DoNotOptimize(format_fleet_grid(merged));
		benchmark::DoNotOptimize(format_fleet_markdown(merged));
	}
	state.SetItemsProcessed(int64_t(state.iterations()) * state.range(0));
	std::error_code ignored;
	fs::remove_all(top, ignored);
}

// 10,000 cases for the shape of the curve, 100,000 for a fleet's size; one
// kernel (a plain run) and four (two kernels x two boots).
void sizes(benchmark::internal::Benchmark *b)
{
	for (int64_t kernels : {1, 4})
		for (int64_t cases : {10000, 100000})
			b->Args({cases, kernels});
	b->Unit(benchmark::kMillisecond)->Iterations(1);
}

BENCHMARK(report_format<format_ktap>)->Name("report/ktap")->Apply(sizes);
BENCHMARK(report_format<format_junit>)->Name("report/junit")->Apply(sizes);
BENCHMARK(report_format<html>)->Name("report/html")->Apply(sizes);
BENCHMARK(report_format<markdown>)->Name("report/markdown")->Apply(sizes);
BENCHMARK(compare)->Name("compare")->Apply(sizes);
BENCHMARK(fleet)->Name("fleet")->Args({10000, 10})->Args({100000, 10})->Unit(benchmark::kMillisecond)->Iterations(1);

} // namespace

BENCHMARK_MAIN();
