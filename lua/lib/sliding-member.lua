--[[ sliding-member: the name of a SLIDING_WINDOW log's member, as lib/sliding-window's consume
  adds it and its refund removes it: the stamp of its take (us) and its number, unique in the log. ]]

local function member(stamp, index)
  return stamp .. ':' .. index
end
