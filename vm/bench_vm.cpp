// SPDX-License-Identifier: GPL-2.0
#include "bench_vm.hpp"

#include <fstream>
#include <sstream>

#include "kernel_info.hpp"
#include "sys_error.hpp"

namespace pinmatrix::bench {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path bench_binary()
{
	const fs::path bin = fs::read_symlink("/proc/self/exe").parent_path() / "pinmatrix_bench";
	if (!fs::exists(bin))
		throw usage_error("--bench: " + bin.string() + " not found (build the pinmatrix_bench target)");
	return bin;
}

std::vector<std::string> guest_argv(const fs::path &bench, const std::string &args, const fs::path &module_ko)
{
	std::vector<std::string> argv = {bench.string(), "--pm_module=" + module_ko.string(), "--pm_device=rxe0",
					 "--benchmark_out=/run/pinmatrix/bench.json",
					 "--benchmark_out_format=json"};
	std::istringstream extra(args);
	for (std::string a; extra >> a;)
		argv.push_back(a);
	return argv;
}

void collect(const fs::path &guest_dir, const fs::path &out, json &doc)
{
	json info = {{"command", "pinmatrix_bench (see guest/job.env)"}, {"exit", nullptr}};
	try {
		if (fs::exists(guest_dir / "bench_exit"))
			info["exit"] = std::stoi(read_text_file((guest_dir / "bench_exit").string()));
	} catch (const std::exception &) {
	}
	std::error_code ec;
	fs::remove(out / "bench.json", ec);
	const fs::path produced = guest_dir / "bench.json";
	if (fs::exists(produced) && fs::file_size(produced) > 0) {
		fs::copy_file(produced, out / "bench.json", fs::copy_options::overwrite_existing);
		doc["benchmarks"] = "bench.json";
		try {
			std::ifstream in(out / "bench.json");
			const json b = json::parse(in);
			size_t n = 0, skipped = 0;
			for (const auto &r : b.value("benchmarks", json::array())) {
				n++;
				skipped += r.value("error_occurred", false);
			}
			info["benchmarks"] = n;
			info["skipped"] = skipped;
		} catch (const std::exception &e) {
			info["unreadable"] = e.what();
		}
	}
	doc["bench"] = info;
}

bool print_summary(const json &doc, std::ostream &out)
{
	const json info = doc.value("bench", json::object());
	if (!doc.contains("benchmarks")) {
		out << "pinmatrix vm: benchmarks: no bench.json from the guest (pinmatrix_bench exit "
		    << (info.contains("exit") && !info["exit"].is_null() ? info["exit"].dump() : std::string("unknown"))
		    << "; see guest/job.log)\n";
		return false;
	}
	const bool clean = info.value("exit", json(-1)) == json(0) && !info.contains("unreadable");
	out << "pinmatrix vm: benchmarks: " << info.value("benchmarks", 0) << " in bench.json ("
	    << info.value("skipped", 0) << " skipped with a reason)";
	if (!clean)
		out << ", pinmatrix_bench exit " << info.value("exit", json(nullptr)).dump();
	out << "\n";
	return clean;
}

} // namespace pinmatrix::bench
