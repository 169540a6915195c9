-- Phalanx's gate in slurmctld (JobSubmitPlugins=lua; this file next to slurm.conf as
-- job_submit.lua). See docs/slurm.md.
--
-- A job is Phalanx's ("managed") when it carries --phx-* options (phalanx_spank.so puts
-- PHALANX_MANAGED=<options> into the job's control environment, job_desc.spank_job_env) or when
-- it is submitted to one of MANAGED_PARTITIONS. For a managed job this script
--   * always: sets AdminComment "phalanx:<options>" (no blank, so `scontrol -o show job` stays
--     parsable; phalanxd's Slurm mode finds its jobs by it);
--   * with HOLD = true only: delays the job by its fallback delay (begin_time = now + delay,
--     squeue Reason=BeginTime). phalanxd's Slurm mode (not written yet) is to take such jobs,
--     set their node list and start them; if phalanxd is down, Slurm schedules them itself once
--     the delay has passed, so a dead phalanxd never stops the cluster.
-- HOLD is false as shipped: until phalanxd's Slurm mode exists nothing would place a delayed job
-- early, so it would only make managed jobs wait. Everything else passes untouched.
--
-- The delay: PHALANX_FALLBACK_DELAY_S from the job's control environment (the plugstack.conf
-- key fallback_delay_s=), else DEFAULT_DELAY_S; never more than MAX_DELAY_S.

local HOLD = false
local MANAGED_PARTITIONS = {} -- e.g. { ["gpu-phalanx"] = true }
local DEFAULT_DELAY_S = 30
local MAX_DELAY_S = 60

-- job_desc.spank_job_env is a table indexed from 0 ("NAME=value"): pairs, not ipairs.
local function spank_env(job_desc, name)
   if job_desc.spank_job_env == nil then return nil end
   for _, kv in pairs(job_desc.spank_job_env) do
      local v = string.match(kv, "^" .. name .. "=(.*)$")
      if v ~= nil then return v end
   end
   return nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   local options = spank_env(job_desc, "PHALANX_MANAGED")
   if options == nil and job_desc.partition ~= nil and MANAGED_PARTITIONS[job_desc.partition] then
      options = "partition=" .. job_desc.partition
   end
   if options == nil then return slurm.SUCCESS end
   job_desc.admin_comment = "phalanx:" .. options
   if HOLD then
      local delay = tonumber(spank_env(job_desc, "PHALANX_FALLBACK_DELAY_S") or "") or DEFAULT_DELAY_S
      if delay < 0 then delay = 0 end
      if delay > MAX_DELAY_S then delay = MAX_DELAY_S end
      local now = os.time()
      if job_desc.begin_time == nil or job_desc.begin_time < now + delay then
         job_desc.begin_time = now + delay
      end
      slurm.log_info("job_submit/lua: phalanx job (%s) waits up to %d s for phalanxd", options, delay)
   end
   return slurm.SUCCESS
end

-- A delayed job's owner could start it early (scontrol update StartTime=now) and skip Phalanx:
-- only root (phalanxd, SlurmUser) may change the start of a managed job while HOLD is on. (The
-- owner's scontrol then says "Unspecified error"; the log_user text does not reach it in 22.05.)
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   if HOLD and modify_uid ~= 0 and job_desc.begin_time ~= nil and job_desc.begin_time ~= 0 and
      job_rec.admin_comment ~= nil and string.match(job_rec.admin_comment, "^phalanx:") then
      slurm.log_user("phalanx: this job is placed by Phalanx; its start time is not yours to change")
      return slurm.ERROR
   end
   return slurm.SUCCESS
end

return slurm.SUCCESS
