--[[
adaptalloc's job_submit hook for Slurm (JobSubmitPlugins=lua).

THIS FILE HOLDS NOTHING YET: it accepts every job unchanged and logs nothing.
A later issue fills it: moldable jobs (min nodes < max nodes) will be held for
the adaptalloc daemon, fail-open when the daemon is not alive (see DESIGN.md).

Slurm loads it from the directory of slurm.conf; deploy/local/up.sh links it there.
--]]

function slurm_job_submit(job_desc, part_list, submit_uid)
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end

return slurm.SUCCESS
