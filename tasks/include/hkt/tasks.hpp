// The tasks of hkt in one include: the library (<hkt/hkt.hpp>) and every installed
// header of the tasks layer: data sets, the trainer, experiments, run files.
#pragma once
#include "hkt/hkt.hpp"
#include "hkt/tasks/array_data.hpp"
#include "hkt/tasks/arrays.hpp"
#include "hkt/tasks/dataset.hpp"
#include "hkt/tasks/distributed.hpp"
#include "hkt/tasks/experiment.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/parked_runs.hpp"
#include "hkt/tasks/images.hpp"
#include "hkt/tasks/imdb.hpp"
#include "hkt/tasks/listops.hpp"
#include "hkt/tasks/memory.hpp"
#include "hkt/tasks/registry.hpp"
#include "hkt/tasks/stats.hpp"
#include "hkt/tasks/text_data.hpp"
#include "hkt/tasks/train.hpp"
