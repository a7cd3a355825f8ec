// SPDX-License-Identifier: GPL-2.0
#pragma once

// Latency plots as inline SVG: no script, no fonts, nothing fetched when
// the page is viewed.

#include <string>
#include <vector>

namespace pinmatrix::report {

struct plot_lane {
	std::string name;		// the kernel, shown in each dot's tooltip
	std::string color;		// CSS colour of its dots
	std::vector<double> samples;	// ns
};

struct plot_row {
	std::string label;		// left of the plot
	std::string note;		// right of the plot: median, spread, n
	std::string link;		// "#case-A", or empty
	bool heading = false;		// a group heading: label only
	bool aggregate = false;		// all cases of a group: drawn bolder
	std::vector<plot_lane> lanes;	// one per kernel
};

// A horizontal dot plot on a logarithmic time axis: per row and lane every
// sample as a dot, the median as a bar, the range as a line and, from four
// samples on, the interquartile range as a band. Empty when no row has a
// sample.
std::string svg_dot_plot(const std::vector<plot_row> &rows, const std::string &description);

} // namespace pinmatrix::report
