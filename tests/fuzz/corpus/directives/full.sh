#!/bin/bash
#PHX -G 16 -t 2:00:00
#PHX --topology leaf:prefer
#PHX -J pretrain -o logs/%x-%j.out      # comment
#PHX --checkpoint-signal USR1@120
#PHX --export=ALL,WANDB_MODE=offline --dependency=afterok:3:5
srun python train.py
