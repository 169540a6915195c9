ARGS -N 2 --gpus-per-node=8 -A ml --priority=urgent
#!/bin/sh
#PHX --elastic-step=8 -G 8:32 --preemptible
#PHX --checkpoint-interval=30m --hold --exclusive
echo hi
