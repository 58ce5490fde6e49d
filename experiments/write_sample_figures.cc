// Writes SampleFigures() into the directory named by its one argument, for svg_render_test.
#include <fstream>
#include <iostream>

#include "experiments/svg_figures_samples.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_sample_figures <existing output directory>\n";
    return 2;
  }
  for (const auto& [name, svg] : fgl::experiments::SampleFigures()) {
    const std::string path = std::string(argv[1]) + "/" + name;
    std::ofstream out(path);
    out << svg;
    if (!out.good() || svg.empty()) {
      std::cerr << "write_sample_figures: could not write " << path << (svg.empty() ? " (empty figure)" : "") << "\n";
      return 1;
    }
  }
  return 0;
}
