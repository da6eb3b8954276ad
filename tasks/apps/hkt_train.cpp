// hkt-train: trains one model on one task (tasks/include/hkt/tasks/train.hpp).
//
//   hkt-train --task listops --model hkt-small --steps 5000 --run-dir runs/listops-hkt
//   hkt-train --config run.json --lr 3e-4          # file values, then flag overrides
//   hkt-train --resume runs/listops-hkt            # continue after an interruption
#include "train_main.hpp"

int main(int argc, char** argv) { return hkt::apps::train_main(argc, argv); }
