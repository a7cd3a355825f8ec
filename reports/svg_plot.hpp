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

// One line of an x-y plot: points joined in x order.
struct xy_series {
	std::string name;		// the legend
	std::string color;		// CSS colour
	struct point {
		double x = 0, y = 0;
		std::string tip;	// the point's tooltip
	};
	std::vector<point> points;
};

// A line plot with logarithmic x and y axes (x in bytes: "4 KiB", "1 MiB";
// y in ns: "10 µs"), a legend on the right. Empty when no series has a
// point with x > 0 and y > 0.
std::string svg_xy_plot(const std::vector<xy_series> &series, const std::string &description,
			const std::string &y_label);

} // namespace pinmatrix::report
