#!/bin/sh
# The simulated platforms' real media (see trawl/simulator/media.py): tiny clips made once with
# ffmpeg 5.1 and committed, so the bytes are the same on every machine and no ffmpeg is needed to
# serve them. Picture: 1 frame per second (the test pattern counts the seconds); sound: a 440 Hz
# beep of a quarter second every ten seconds, silence between (silent AAC frames cost a few bytes).
# Their lengths are what the simulated platforms say the videos last.
set -eu
cd "$(dirname "$0")"
V="-c:v libx264 -preset veryslow -crf 38 -pix_fmt yuv420p -g 60 -bf 0 -x264-params bframes=0"
A="-c:a aac -b:a 8k -ac 1 -ar 8000"
beep() { echo "sine=frequency=440:sample_rate=8000:duration=$1,volume='if(lt(mod(t,10),0.25),0.5,0)':eval=frame"; }
picture() { echo "$1=size=$2:rate=${4:-1}:duration=$3"; }
common="-map_metadata -1 -fflags +bitexact -flags:v +bitexact -flags:a +bitexact"
# Bilibili DASH (BV117411r7R1 and the Hi-Res video: 486 s): a video-only and an audio-only
# fragmented MP4, as .m4s streams are.
ffmpeg -v error -y -f lavfi -i "$(picture testsrc 192x108 486)" $V $common -an \
  -movflags frag_keyframe+empty_moov+default_base_moof -f mp4 bilibili-dash-video.m4s
ffmpeg -v error -y -f lavfi -i "$(beep 486)" $A $common -vn \
  -movflags frag_keyframe+empty_moov+default_base_moof -frag_duration 60000000 -f mp4 bilibili-dash-audio.m4s
# Bilibili durl FLV (BV1GJ411x7h7): part 1 (120 s, one segment), part 2 (180 s in two 90 s segments,
# the picture counting on from one to the next).
ffmpeg -v error -y -f lavfi -i "$(picture testsrc 192x108 120)" -f lavfi -i "$(beep 120)" $V $A $common -f flv bilibili-p1.flv
ffmpeg -v error -y -f lavfi -i "$(picture testsrc 192x108 180)" -f lavfi -i "$(beep 180)" $V $A $common -ss 0 -t 90 -f flv bilibili-p2-1.flv
ffmpeg -v error -y -ss 90 -f lavfi -i "$(picture testsrc 192x108 180)" -ss 90 -f lavfi -i "$(beep 180)" $V $A $common -t 90 -f flv bilibili-p2-2.flv
# Facebook progressive MP4 (the classic video 42.5 s, the reel 15.2 s, portrait), HD and SD.
fb() { ffmpeg -v error -y -f lavfi -i "$(picture testsrc2 $1 $2 2)" -f lavfi -i "$(beep $2)" $V $A $common -movflags +faststart -f mp4 "$3"; }
fb 320x180 42.5 facebook-classic-hd.mp4
fb 160x90 42.5 facebook-classic-sd.mp4
fb 180x320 15.2 facebook-reel-hd.mp4
fb 90x160 15.2 facebook-reel-sd.mp4
# Weibo progressive MP4 (the playback-list post 593 s, the urls post 21.222 s).
wb() { ffmpeg -v error -y -f lavfi -i "$(picture smptebars 192x108 $1)" -f lavfi -i "$(beep $1)" $V $A $common -movflags +faststart -f mp4 "$2"; }
wb 593 weibo-playback.mp4
wb 21.222 weibo-urls.mp4
# The generic demo's WebM (trawl/simulator/media.py's playable WebM): 3 s of VP9 and Opus.
ffmpeg -v error -y -f lavfi -i "$(picture testsrc 192x108 3 12)" -f lavfi -i "sine=frequency=330:sample_rate=48000:duration=3" \
  -c:v libvpx-vp9 -b:v 0 -crf 45 -deadline good -c:a libopus -b:a 16k $common -f webm clip.webm
