--[[
adaptalloc_submit: adaptalloc's job_submit hook, as a Lua module for Slurm's job_submit/lua
(JobSubmitPlugins=lua). The site's own job_submit.lua loads it and calls it from its
slurm_job_submit and slurm_job_modify, one line each:

    return adaptalloc.job_submit(job_desc, part_list, submit_uid)
    return adaptalloc.job_modify(job_desc, job_rec, part_list, modify_uid)

(job_submit.lua, shipped beside this file, is the complete script for a cluster without one
and shows how the site's script loads this module: docs/admin/install.md). Both return a
Slurm code: job_submit always slurm.SUCCESS, job_modify slurm.SUCCESS or the refusal below.
Written against Slurm 22.05's job_submit/lua (Lua 5.1): the job_desc fields read here are
those its _get_job_req_field exposes. Its settings are read from adaptalloc_submit.conf
beside this file, on every submission.

What it does, and all it does: a moldable job (min nodes < max nodes) that is not opted out, not
a job array, not submitted held or with a priority of its own, that the daemon can size
(see leave_alone below), in an enabled partition, submitted while the adaptalloc daemon's
heartbeat is fresh, is held (priority 0) and marked in admin_comment with
"adaptalloc:v1:held", once a line announcing it is appended to the daemon's spool file. The
daemon then picks the size, sets it and the time limit, and releases the job. Every other job
passes untouched. At submission it sets job_desc.admin_comment and job_desc.priority and
nothing else, and logs (slurm.log_info, with the submitting uid) what it held and which
moldable jobs it left alone and why. On a change to a job it refuses one thing, described
below the configuration: the job's own user changing its size or limits while it is held.
The site's script calls job_submit after its own checks (a job it rejects is never held).

Fail-open: any error in here (missing or bad config, unreadable heartbeat, spool not written,
a Lua fault) leaves the job exactly as submitted. A Lua runtime error escaping this hook is
logged by 22.05 with the job accepted as the hook left it, and rejects the submission in
later versions; so all the work runs under pcall, and job_desc is only changed once
everything it depends on has been read and the spool line written. The job id is not known
yet when Slurm calls this hook (job_desc.job_id is NO_VAL in 22.05), so the spool line is a
wake-up call; the daemon finds held jobs by their marker.

Configuration, adaptalloc_submit.conf beside this file ("key = value" lines; a "#" starts a
comment, wherever it is, so values cannot contain one):
  state_dir          the daemon's state directory: heartbeat file "heartbeat" (whole epoch
                     seconds), spool file "spool" (required: a job is held only once its line
                     is written there)
  heartbeat_max_age  seconds (a whole number) after which the daemon counts as gone (default
                     15); a heartbeat from the future, or one that is not a whole number of
                     seconds, counts as no heartbeat
  partitions         "*" (default) or a comma-separated list of partitions to enable; a job
                     that names no partition is in the one partition part_list flags default
                     (if exactly one is), else it is not held
A bad state_dir or heartbeat_max_age holds nothing.
Opting out: a comment with the tag "adaptalloc:v1 resize=no".

Modes (docs/admin/rollout.md): the daemon publishes, beside its heartbeat, the file "modes"
(plugin/daemon/modes.py: "default MODE", "partition NAME MODE", "account NAME MODE" lines,
MODE advise or enforce, rewritten on every reload). A job that would be held is held only
when its mode is enforce: its account's line if there is one (the account it names, else
its user's default account), else enforce when every partition it lists (or the default
partition) resolves to enforce by its own line or the default, as policies/mode.py does.
An advise job is left as submitted: only the spool line
"advise <epoch> <uid> <min> <max> <tasks> <tasks per node>" is appended (integers only, 0 for
a count not set), so the daemon can record the decision it would have made with what the user
asked for (Slurm forgets the maximum once a job starts), and it is logged as left alone. No
modes file beside a fresh heartbeat (a daemon from before modes) is enforce, as before; a
modes file without a readable default line advises everything.

While a job is held for sizing (priority 0 and the marker in its admin comment, which only
this hook and admins can write), job_modify refuses its own user's changes to what the
daemon's decision rests on (node range, time limit, partition, QOS, account, reservation,
constraints, node lists, tasks, CPUs and memory, TRES, licenses: SIZING_NUMBERS and
SIZING_TEXT below), and its nice value, which can release it, with Slurm's "Job can not be
altered now, try again later". The daemon reads those
fields, checks them against the partition, QOS and association limits and then sets NumNodes
and TimeLimit as an admin, which slurmctld marks as admin-set and no longer checks against
those limits: a change landing between the daemon's read and its update (QOS or partition
swapped for a tighter one, the node range narrowed) would otherwise be sized past the new
limits or outside the new range. Every other change (name, comment, release, ...) passes, and
so does every change by root or another user (the daemon, admins, operators and coordinators,
who may already set those fields past the limits). Once the daemon has released the job the
hook refuses nothing. A job submitted by the daemon's own (non-root) user is refused the
daemon's resize too, and the daemon then releases it as submitted (plugin/daemon/apply.py).
Fail-open: an error in the check lets the change through.
--]]

local M = {}

local MARKER = "adaptalloc:v1:held"
local CONF_NAME = "adaptalloc_submit.conf"
local DEFAULT_MAX_AGE = 15
-- Slurm's "not set" for 32-bit and 16-bit fields (NO_VAL + 1 and NO_VAL16 + 1 mean infinite).
local NO_VAL = 0xfffffffe
local NO_VAL16 = 0xfffe

-- The directory this module was loaded from (its settings file sits beside it).
local function module_dir()
    local source = debug.getinfo(1, "S").source
    return source:match("^@(.*)/[^/]*$") or "."
end

-- A whole number of seconds written in decimal digits, or nil: tonumber() would also take
-- "1e999" (infinity), "inf", "nan" and "0x10", none of which the daemon writes.
local function whole_seconds(text)
    local digits = text and text:match("^%s*(%d+)%s*$")
    if digits == nil or #digits > 12 then
        return nil
    end
    return tonumber(digits)
end

-- The settings, or nil and why when the hook must hold nothing.
local function read_conf()
    local file = io.open(module_dir() .. "/" .. CONF_NAME, "r")
    if not file then
        return nil, CONF_NAME .. " is missing"
    end
    local conf = { partitions = "*" }
    for line in file:lines() do
        local key, value = line:gsub("#.*$", ""):match("^%s*([%w_]+)%s*=%s*(.-)%s*$")
        if key then
            conf[key] = value
        end
    end
    file:close()
    if conf.state_dir == nil or conf.state_dir == "" then
        return nil, CONF_NAME .. " sets no state_dir"
    end
    if conf.heartbeat_max_age == nil then
        conf.heartbeat_max_age = DEFAULT_MAX_AGE
    else
        conf.heartbeat_max_age = whole_seconds(conf.heartbeat_max_age)
        if conf.heartbeat_max_age == nil then
            return nil, CONF_NAME .. ": heartbeat_max_age is not a whole number of seconds"
        end
    end
    return conf
end

-- Alive: a heartbeat of whole seconds, no later than now and at most heartbeat_max_age old.
local function daemon_alive(conf)
    local file = io.open(conf.state_dir .. "/heartbeat", "r")
    if not file then
        return false
    end
    local stamp = whole_seconds(file:read("*l"))
    file:close()
    if stamp == nil then
        return false
    end
    local age = os.time() - stamp
    return age >= 0 and age <= conf.heartbeat_max_age
end

-- The partition Slurm gives a job that names none: the one part_list flags default. Nil
-- when none or several are flagged.
local function default_partition(part_list)
    local found = nil
    for name, part in pairs(part_list or {}) do
        if part.flag_default == 1 then
            if found ~= nil then
                return nil
            end
            found = name
        end
    end
    return found
end

local function partition_enabled(conf, partition, part_list)
    if conf.partitions == "*" then
        return true
    end
    if partition == nil or partition == "" then
        partition = default_partition(part_list)
        if partition == nil then
            return false
        end
    end
    -- A job listing several partitions is enabled when every one of them is.
    for wanted in partition:gmatch("[^,%s]+") do
        local found = false
        for name in conf.partitions:gmatch("[^,%s]+") do
            if name == wanted then
                found = true
            end
        end
        if not found then
            return false
        end
    end
    return true
end

-- The daemon's published modes (see the header), or the enforce-everything table of a
-- daemon that publishes none.
local function read_modes(conf)
    local modes = { partition = {}, account = {} }
    local file = io.open(conf.state_dir .. "/modes", "r")
    if not file then
        modes.default = "enforce"
        return modes
    end
    for line in file:lines() do
        local kind, name, mode = line:match("^(%a+)%s+(%S+)%s*(%S*)%s*$")
        if kind == "default" and mode == "" then
            modes.default = name
        elseif (kind == "partition" or kind == "account") and mode ~= "" then
            modes[kind][name] = mode
        end
    end
    file:close()
    return modes
end

-- "enforce" or "advise" for this job (see the header); anything unreadable advises.
local function job_mode(modes, job_desc, part_list)
    local account = job_desc.account
    if account == nil or account == "" then
        account = job_desc.default_account
    end
    local mode = account and modes.account[account]
    if mode == nil then
        local partition = job_desc.partition
        if partition == nil or partition == "" then
            partition = default_partition(part_list) or ""
        end
        mode = modes.default
        for name in partition:gmatch("[^,%s]+") do
            local own = modes.partition[name] or modes.default
            if own ~= "enforce" then
                mode = "advise"
                break
            end
            mode = own
        end
    end
    if mode == "enforce" then
        return mode
    end
    return "advise"
end

local function moldable(job_desc)
    local low, high = job_desc.min_nodes, job_desc.max_nodes
    return low ~= nil and high ~= nil and low >= 1 and low < NO_VAL and high < NO_VAL and high > low
end

local function given(text)
    return text ~= nil and text ~= ""
end

-- A 16-bit option the submitter turned on: not 0, not NO_VAL16 (unset) or infinite.
local function on(value)
    return value ~= nil and value ~= 0 and value < NO_VAL16
end

-- Why a moldable job must not be held, or nil. An interactive allocation (salloc, srun: no
-- batch script) has a user waiting at a terminal, and with --immediate it fails when it
-- cannot start in time, which a held job cannot; 22.05 passes the hook immediate = 1 for -I
-- and -I1 only (slurm_opt.c: salloc/srun enforce -I N themselves), so the hook cannot tell
-- which interactive allocation has a deadline and holds none. The daemon sizes a job from
-- the idle nodes of its partitions; that count does not say what a job can run on when it
-- asks for a reservation, features, nodes to use or to avoid or contiguous nodes, and a
-- hetjob component starts only with its siblings. A job listing several partitions is held:
-- the daemon picks one of them by predicted completion (policies/partition.py).
local function leave_alone(job_desc)
    if on(job_desc.immediate) then
        return "an immediate allocation"
    end
    if not given(job_desc.script) then
        return "an interactive allocation"
    end
    local offset = job_desc.het_job_offset
    if offset ~= nil and offset < NO_VAL then
        return "a hetjob component"
    end
    if given(job_desc.reservation) then
        return "a reservation"
    end
    if given(job_desc.features) then
        return "a constraint"
    end
    if given(job_desc.req_nodes) then
        return "a node list"
    end
    if given(job_desc.exc_nodes) then
        return "excluded nodes"
    end
    if on(job_desc.contiguous) then
        return "contiguous nodes"
    end
    return nil
end

-- A job whose priority the submitter set (sbatch --hold gives 0, an admin's --priority a
-- number) keeps it: releasing it would undo that. Job arrays pass too: Slurm cannot set
-- NumNodes on a whole array ("Job resizing not supported for job arrays").
local function ours_to_hold(job_desc)
    local priority = job_desc.priority
    if priority ~= nil and priority < NO_VAL then
        return false
    end
    local array = job_desc.array_inx
    return array == nil or array == ""
end

local function opted_out(comment)
    -- The v1 tag ends at ";" or at a word that is not key=value; resize=no inside it opts out,
    -- in any case (the daemon reads resize=NO as no too: plugin/appkey.py).
    if comment == nil then
        return false
    end
    -- Padded with spaces so that words at either end match like the others (a %f frontier
    -- does not see the start of a string as a space).
    local tag = (" " .. comment):match("%sadaptalloc:v1%s+([^;]*)")
    return tag ~= nil and (" " .. tag:lower() .. " "):find("%sresize=no%s") ~= nil
end

-- The settings when the job is to be held; else nil, and why when the job was moldable.
local function decide(job_desc, part_list)
    if not moldable(job_desc) then
        return nil
    end
    if not ours_to_hold(job_desc) or opted_out(job_desc.comment) then
        return nil, "submitted held, with a priority, as an array or opted out"
    end
    local why = leave_alone(job_desc)
    if why then
        return nil, why
    end
    local conf, bad = read_conf()
    if conf == nil then
        return nil, bad
    end
    if not partition_enabled(conf, job_desc.partition, part_list) then
        return nil, "not in an enabled partition"
    end
    if not daemon_alive(conf) then
        return nil, "no fresh daemon heartbeat"
    end
    if job_mode(read_modes(conf), job_desc, part_list) ~= "enforce" then
        return nil, "advise mode", conf
    end
    return conf
end

-- True only once the whole line is in the spool (close flushes: a full disk fails there).
local function announce(conf, submit_uid)
    local spool = io.open(conf.state_dir .. "/spool", "a")
    if not spool then
        return false
    end
    local wrote = spool:write(string.format("held %d %d\n", os.time(), submit_uid))
    local closed = spool:close()
    return wrote ~= nil and closed == true
end

-- A count the submitter set, else 0.
local function count(value, unset)
    if value == nil or value >= unset then
        return 0
    end
    return value
end

-- An advise job's spool line: when, whose, the range and task counts asked for (see the
-- header).
local function advise(conf, job_desc, submit_uid)
    local spool = io.open(conf.state_dir .. "/spool", "a")
    if not spool then
        return
    end
    spool:write(string.format("advise %d %d %d %d %d %d\n", os.time(), submit_uid,
                              job_desc.min_nodes, job_desc.max_nodes,
                              count(job_desc.num_tasks, NO_VAL),
                              count(job_desc.ntasks_per_node, NO_VAL16)))
    spool:close()
end

local function hold(job_desc)
    local comment = job_desc.admin_comment
    if comment == nil or comment == "" then
        job_desc.admin_comment = MARKER
    else
        job_desc.admin_comment = MARKER .. " " .. comment
    end
    job_desc.priority = 0
end

local function left_alone(submit_uid, why)
    slurm.log_info("adaptalloc: left a moldable job from uid %d alone: %s", submit_uid, why)
end

local function submit(job_desc, part_list, submit_uid)
    local ok, conf, why, advised = pcall(decide, job_desc, part_list)
    if not ok then
        return left_alone(submit_uid, "error: " .. tostring(conf))
    end
    if conf == nil then
        if advised then
            pcall(advise, advised, job_desc, submit_uid)
        end
        if why then
            left_alone(submit_uid, why)
        end
        return
    end
    local announced, written = pcall(announce, conf, submit_uid)
    if not (announced and written) then
        local spool = "the spool in " .. conf.state_dir .. " cannot be written"
        if not announced then
            spool = spool .. ": error: " .. tostring(written)
        end
        return left_alone(submit_uid, spool)
    end
    local comment = job_desc.admin_comment
    local held, err = pcall(hold, job_desc)
    if not held then
        pcall(function()
            job_desc.admin_comment = comment or ""
        end)
        return left_alone(submit_uid, "error: " .. tostring(err))
    end
    slurm.log_info("adaptalloc: held a moldable job from uid %d for sizing", submit_uid)
end

-- Every submission is accepted: a fault anywhere in submit (logging included) ends it there.
-- Before the hold, that leaves the job as submitted; hold() is the last change made.
function M.job_submit(job_desc, part_list, submit_uid)
    pcall(submit, job_desc, part_list, submit_uid)
    return slurm.SUCCESS
end

-- Slurm's ESLURM_TRANSITION_STATE_NO_UPDATE, "Job can not be altered now, try again later"
-- (22.05's job_submit/lua exports few error names, so the number; slurm.log_user does not
-- reach the user from slurm_job_modify there).
local ALTERED_LATER = 2020

-- The job_desc fields of a modify request the daemon's sizing rests on, or its release: numbers,
-- each group with the value that reads "not set" (NO_VAL for 32-bit fields, NO_VAL16 for 16-bit
-- ones; the memory fields read nil unless set, 22.05's _get_job_req_field), and text (nil or
-- ""). nice is here because a user's Nice update made a held job runnable on 22.05 (seen on the
-- testbed, even under an admin hold); the rest say what a node or the job needs (tasks, CPUs,
-- memory), which the daemon's size and placement read.
local SIZING_NUMBERS = {
    { unset = NO_VAL, names = { "min_nodes", "max_nodes", "time_limit", "time_min", "num_tasks",
                                "min_cpus", "max_cpus", "nice" } },
    { unset = NO_VAL16, names = { "contiguous", "cpus_per_task", "ntasks_per_node",
                                  "pn_min_cpus" } },
    { unset = nil, names = { "min_mem_per_node", "min_mem_per_cpu" } },
}
local SIZING_TEXT = { "partition", "qos", "account", "reservation", "features", "req_nodes",
                      "exc_nodes", "tres_per_job", "tres_per_node", "tres_per_socket",
                      "tres_per_task", "licenses" }

-- The first sizing field the request sets, or nil.
local function sizing_change(job_desc)
    for _, group in ipairs(SIZING_NUMBERS) do
        for _, name in ipairs(group.names) do
            local value = job_desc[name]
            if value ~= nil and value ~= group.unset then
                return name
            end
        end
    end
    for _, name in ipairs(SIZING_TEXT) do
        if given(job_desc[name]) then
            return name
        end
    end
    return nil
end

-- Held for sizing: priority 0 with the marker as a word of the admin comment.
local function held_for_sizing(job_rec)
    local comment = " " .. (job_rec.admin_comment or "") .. " "
    return job_rec.priority == 0 and comment:find("%s" .. MARKER .. "%s") ~= nil
end

-- The field a change must not touch now, or nil (see the header: only the job's own user,
-- only while the job is held for sizing).
local function refused(job_desc, job_rec, modify_uid)
    if modify_uid == 0 or modify_uid ~= job_rec.user_id or not held_for_sizing(job_rec) then
        return nil
    end
    return sizing_change(job_desc)
end

-- slurm.SUCCESS, or ALTERED_LATER for a change refused (see the header).
function M.job_modify(job_desc, job_rec, part_list, modify_uid)
    local ok, field = pcall(refused, job_desc, job_rec, modify_uid)
    if not (ok and field) then
        return slurm.SUCCESS
    end
    pcall(
        slurm.log_info,
        "adaptalloc: refused uid %d's change of %s on job %d while it is held for sizing",
        modify_uid,
        field,
        job_rec.job_id
    )
    return ALTERED_LATER
end

return M
