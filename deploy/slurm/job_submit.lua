--[[
job_submit.lua for a cluster that has none: adaptalloc's hook and nothing else.

Slurm (JobSubmitPlugins=lua) loads job_submit.lua from slurm.conf's directory. adaptalloc's
hook is the module adaptalloc_submit.lua beside it (with its settings adaptalloc_submit.conf);
this script only loads it and calls it. A cluster that has its own job_submit.lua keeps it
and adds what is marked "adaptalloc" below: the block between "adaptalloc: begin" and
"adaptalloc: end" near the top, and one call in each of its slurm_job_submit and
slurm_job_modify (docs/admin/install.md, "Composing the hook with yours"). Call
adaptalloc.job_submit last, after the site's own checks, so that a job the site rejects is
never held.

Fail-open: when the module cannot be loaded (missing, unreadable, a syntax error) the error
is logged once and every job passes untouched; slurmctld still starts and the site's own
checks still run.

slurmctld loads this file again only when its mtime changes, and the module with it: after
replacing adaptalloc_submit.lua, `touch` this file (adaptalloc install-files says so, and
adaptalloc doctor warns while the module is newer than this file).
--]]

-- adaptalloc: begin (load the module beside this file; without it, no job is held)
local adaptalloc = (function()
    local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
    package.path = here .. "?.lua;" .. package.path
    local loaded, module = pcall(require, "adaptalloc_submit")
    if loaded and type(module) == "table" then
        return module
    end
    slurm.log_error("adaptalloc: adaptalloc_submit.lua not loaded, no job is held: %s",
                    tostring(module))
    local pass = function() return slurm.SUCCESS end
    return { job_submit = pass, job_modify = pass }
end)()
-- adaptalloc: end

function slurm_job_submit(job_desc, part_list, submit_uid)
    return adaptalloc.job_submit(job_desc, part_list, submit_uid)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return adaptalloc.job_modify(job_desc, job_rec, part_list, modify_uid)
end

return slurm.SUCCESS
