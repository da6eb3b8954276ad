// hkt-train's whole command line as a function, so that a test executable can run it with
// run options of its own (tests/helpers/train_faults.cpp injects faults through
// RunOptions::after_step); hkt-train's main() is this with none.
#pragma once
#include <functional>

#include "hkt/tasks/train.hpp"

namespace hkt::apps {

// Parses argv as hkt-train does, trains or resumes, and returns the exit status. `adjust`,
// when given, changes the run options after the command line has set them.
int train_main(int argc, char** argv, const std::function<void(hkt::tasks::RunOptions&)>& adjust = {});

}  // namespace hkt::apps
