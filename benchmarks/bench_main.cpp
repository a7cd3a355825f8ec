// SPDX-License-Identifier: GPL-2.0
// pinmatrix_bench: registration latency and the suite's own costs, with
// Google Benchmark. Root, on a node or in the guest (`pinmatrix vm --bench`).
//
//   pinmatrix_bench [--pm_module=pinmatrix.ko] [--pm_device=rxe0]
//                   [--pm_pressure_budget_mib=N] [--pm_iterations_scale=1]
//                   [--benchmark_* ...]
//
// See benchmarks/README.md for the families and how they are measured.

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>

#include "bench_env.hpp"
#include "kernel_info.hpp"

using namespace pinmatrix;
using namespace pinmatrix::bench;

namespace {

bool take_flag(const char *arg, const char *flag, std::string &value)
{
	const size_t n = std::strlen(flag);
	if (std::strncmp(arg, flag, n) || arg[n] != '=')
		return false;
	value = arg + n + 1;
	return true;
}

void usage()
{
	std::fprintf(stderr,
		     "usage: pinmatrix_bench [--pm_module=KO] [--pm_device=NAME] [--pm_pressure_budget_mib=N]\n"
		     "                       [--pm_iterations_scale=F] [--benchmark_filter=REGEX] "
		     "[--benchmark_repetitions=N] [--benchmark_out=FILE --benchmark_out_format=json] ...\n"
		     "  --pm_module   pinmatrix.ko to load when /dev/pinmatrix is absent (env PINMATRIX_MODULE)\n"
		     "  --pm_device   RDMA device (default: the first)\n"
		     "  --pm_pressure_budget_mib  memory it may fill to steer fresh pages into a placement\n"
		     "                            (default 0: MemAvailable less 256 MiB)\n"
		     "  --pm_iterations_scale     multiplies the fixed iteration counts (0.05: a smoke run)\n");
}

} // namespace

int main(int argc, char **argv)
{
	benchmark::Initialize(&argc, argv);
	options opt;
	if (const char *ko = std::getenv("PINMATRIX_MODULE"))
		opt.module_ko = ko;
	for (int i = 1; i < argc; i++) {
		std::string v;
		if (take_flag(argv[i], "--pm_module", opt.module_ko) || take_flag(argv[i], "--pm_device", opt.device))
			continue;
		if (take_flag(argv[i], "--pm_pressure_budget_mib", v)) {
			const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), opt.pressure_budget_mib);
			if (ec == std::errc() && end == v.data() + v.size() && !v.empty())
				continue;
		}
		if (take_flag(argv[i], "--pm_iterations_scale", v)) {
			opt.iterations_scale = std::strtod(v.c_str(), nullptr);
			if (opt.iterations_scale > 0)
				continue;
		}
		std::fprintf(stderr, "pinmatrix_bench: unknown argument '%s'\n", argv[i]);
		usage();
		return 2;
	}

	env &e = env::get();
	e.init(opt);
	const auto k = read_kernel_info();
	benchmark::AddCustomContext("pinmatrix.kernel_release", k.release);
	benchmark::AddCustomContext("pinmatrix.kernel_cmdline", k.cmdline);
	benchmark::AddCustomContext("pinmatrix.restricted_placement", std::string(name(e.restricted())));
	benchmark::AddCustomContext("pinmatrix.module", e.module() ? "ok" : e.module_why());
	benchmark::AddCustomContext("pinmatrix.rdma_device", e.device() ? e.device()->name() : e.device_why());
	const auto m = read_free_memory();
	benchmark::AddCustomContext("pinmatrix.free_at_start",
				    "ordinary " + size_label(m.ordinary) + ", movable " + size_label(m.movable) +
					    ", cma " + size_label(m.cma));

	// Cheap and placement-neutral families first, then the pinning ones
	// grouped by placement: steering memory towards one (filling what
	// fresh pages would take first) happens once per placement.
	register_harness();
	register_probe();
	register_populate();
	register_ualink();
	for (placement p : e.placements()) {
		register_reg_mr(p);
		register_module_pin(p);
		register_gup_test(p);
	}
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	return 0;
}
